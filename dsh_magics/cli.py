"""``dsh-magics`` command line: the dispatcher only.

A subcommand is an arguments/run pair, lazily imported from the package that owns it
(harness/, host/, mcp/, answer/, attach/), plus a row in :data:`COMMANDS`; a failure is
one coded line.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from .errors import DshError

AddArgs = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]


# -------------------------------------------------------------------- harness
def _add_schema(p: argparse.ArgumentParser) -> None:
    from .harness.cli import add_schema_arguments

    add_schema_arguments(p)


def _run_schema(args: argparse.Namespace) -> int:
    from .harness.cli import run_schema

    return run_schema(args)


def _add_escalate(p: argparse.ArgumentParser) -> None:
    from .harness.cli import add_escalate_arguments

    add_escalate_arguments(p)


def _run_escalate(args: argparse.Namespace) -> int:
    from .harness.cli import run_escalate

    return run_escalate(args)


def _add_catalog(p: argparse.ArgumentParser) -> None:
    from .harness.cli import add_catalog_arguments

    add_catalog_arguments(p)


def _run_catalog(args: argparse.Namespace) -> int:
    from .harness.cli import run_catalog

    return run_catalog(args)


# ----------------------------------------------------------------------- host
def _add_host(p: argparse.ArgumentParser) -> None:
    from .host.cli import add_arguments

    add_arguments(p)


def _run_host(args: argparse.Namespace) -> int:
    from .host.cli import run

    return run(args)


# ------------------------------------------------------------------------ mcp
def _add_mcp(p: argparse.ArgumentParser) -> None:
    from .mcp.cli import add_arguments

    add_arguments(p)


def _run_mcp(args: argparse.Namespace) -> int:
    from .mcp.cli import run

    return run(args)


# --------------------------------------------------------------------- answer
def _add_answer(p: argparse.ArgumentParser) -> None:
    from .answer.cli import add_arguments

    add_arguments(p)


def _run_answer(args: argparse.Namespace) -> int:
    from .answer.cli import run

    return run(args)


# --------------------------------------------------------------- attach, log
def _add_attach(p: argparse.ArgumentParser) -> None:
    from .attach.cli import add_attach_arguments

    add_attach_arguments(p)


def _run_attach(args: argparse.Namespace) -> int:
    from .attach.cli import run_attach

    return run_attach(args)


def _add_log(p: argparse.ArgumentParser) -> None:
    from .attach.cli import add_log_arguments

    add_log_arguments(p)


def _run_log(args: argparse.Namespace) -> int:
    from .attach.cli import run_log

    return run_log(args)


#: name -> (help, add arguments, run).  Other adapters add rows here.
COMMANDS: dict[str, tuple[str, AddArgs, Run]] = {
    "schema": ("show the harness bash tool schema for a configuration", _add_schema, _run_schema),
    "escalate": (
        "simulate a sandbox escalation through the approval chain",
        _add_escalate,
        _run_escalate,
    ),
    "catalog": (
        "read a harness tool-catalog.md, optionally checking drift",
        _add_catalog,
        _run_catalog,
    ),
    "host": (
        "start, inspect or stop the terminal host (terminals that outlive kernel restarts)",
        _add_host,
        _run_host,
    ),
    "mcp": (
        "serve the bash_* agent tools as an MCP server on stdio (terminals in the terminal host)",
        _add_mcp,
        _run_mcp,
    ),
    "answer": (
        "answer a job's password prompt in a terminal host's session (hidden entry)",
        _add_answer,
        _run_answer,
    ),
    "attach": (
        "attach this terminal to a host's terminal session, like tmux attach (Ctrl-] detaches)",
        _add_attach,
        _run_attach,
    ),
    "log": ("show who typed what into a host's terminal session", _add_log, _run_log),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dsh-magics", description="dsh-magics command line")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, add, _run) in COMMANDS.items():
        add(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    _help, _add, run = COMMANDS[args.command]
    try:
        return run(args)
    except DshError as exc:
        print(f"dsh-magics: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
