"""``%bash_schema``: open the tool-schema inspector from a notebook line.

Apart from ``magics.py``, so it is an independent adapter; the extension calls :func:`register`.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from ..errors import InvalidArgument
from ..notebook.magic_args import usage_errors


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting the kernel."""

    def error(self, message: str) -> Any:  # type: ignore[override]
        raise InvalidArgument(f"%bash_schema: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> Any:  # type: ignore[override]
        if message:
            raise InvalidArgument(message.strip())
        raise _HelpShown


class _HelpShown(Exception):
    pass


def _parser() -> _Parser:
    from ..harness import ERAS

    p = _Parser(
        prog="%bash_schema",
        description="Inspect the harness bash tool schema.",
        add_help=True,
        allow_abbrev=False,
    )
    p.add_argument("--source", choices=("live", "model"), default=None)
    p.add_argument("--version", default=None, help="published package version for live")
    p.add_argument("--era", choices=ERAS, default=None)
    bg = p.add_mutually_exclusive_group()
    bg.add_argument("--background", dest="background", action="store_true", default=None)
    bg.add_argument("--no-background", dest="background", action="store_false")
    p.add_argument(
        "--sandbox", choices=("none", "read-only", "workspace-write", "danger-full-access")
    )
    p.add_argument("--preset", default=None)
    p.add_argument("--baseline", default=None)
    p.add_argument("--catalog", default=None, metavar="PATH", help="a harness docs/tool-catalog.md")
    p.add_argument("--text", action="store_true", help="print the text rendering instead")
    return p


@usage_errors
def bash_schema(line: str = "") -> Any:
    """The ``%bash_schema`` line magic (``%bash_schema --help`` lists the options).

    Usage::

        %bash_schema                                   # live when installed, else the model
        %bash_schema --source model --no-background --sandbox read-only
        %bash_schema --era rfc-foreground-only
        %bash_schema --catalog path/to/docs/tool-catalog.md
        %bash_schema --text                            # print the plain-text rendering
    """
    from .inspector import inspect

    try:
        words = shlex.split(line)
    except ValueError as exc:  # unbalanced quotes
        raise InvalidArgument(f"%bash_schema: {exc}") from None
    try:
        args = _parser().parse_args(words)
    except _HelpShown:
        return None
    controls: dict[str, Any] = {}
    for name in ("era", "background", "sandbox", "preset", "baseline"):
        value = getattr(args, name)
        if value is not None:
            controls[name] = value
    insp = inspect(source=args.source, version=args.version, catalog=args.catalog, **controls)
    if args.text:
        print(repr(insp))
        return None
    return insp


def register(ipython: Any) -> None:
    """Register ``%bash_schema`` on an IPython shell (called by the extension loader)."""
    ipython.register_magic_function(bash_schema, magic_kind="line", magic_name="bash_schema")


def unregister(ipython: Any) -> None:
    """Remove ``%bash_schema`` again (``%unload_ext`` / ``%reload_ext``)."""
    ipython.magics_manager.magics["line"].pop("bash_schema", None)
