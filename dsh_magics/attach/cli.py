"""``dsh-magics attach SESSION`` and ``dsh-magics log SESSION``."""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
from typing import Any

from ..errors import InvalidArgument
from ..host.cli import add_lookup_arguments
from .client import Attacher
from .link import Conn, find

#: The default detach key: Ctrl-] (as telnet's and docker's).
DEFAULT_DETACH = "C-]"


def parse_detach_key(spec: str) -> bytes:
    """``C-x`` (Ctrl and one of ``@ A-Z [ \\ ] ^ _``, any case) as its byte."""
    s = spec.strip()
    if len(s) == 3 and s[:2].upper() == "C-":
        ch = s[2].upper()
        if "@" <= ch <= "_":
            code = ord(ch) - 0x40
            if code not in (0x03, 0x0D, 0x1B):  # Ctrl-C, Enter and Esc are needed as keys
                return bytes([code])
    raise ValueError(
        f"detach key {spec!r}: give C- and one of @, A-Z, [, \\, ], ^, _ (not C-c, C-m or C-[)"
    )


ATTACH_DESCRIPTION = """\
Attach this terminal to the terminal session SESSION of a terminal host, like
`tmux attach`: you see its screen as it is, type into it, and leave with the
detach key (default Ctrl-]); its shell and jobs keep running.

At an idle prompt your keys open bash's own line editor (history, Tab
completion); Enter runs the line as a job with source "person", which the
notebook and agents see as SESSION_BUSY while it runs. While a job runs, your
keys are its input and Ctrl-C interrupts it as bash_interrupt does.

Without --host: the only running host, or the one running host that has
SESSION; otherwise the error lists them. The window size follows the last
(not read-only) viewer to attach, resize or type. See docs/attach.md.
"""


def add_attach_arguments(p: argparse.ArgumentParser) -> None:
    p.formatter_class = argparse.RawDescriptionHelpFormatter
    p.description = ATTACH_DESCRIPTION
    add_lookup_arguments(p, "the terminal session")
    p.add_argument("--read-only", action="store_true", help="watch without typing")
    p.add_argument(
        "--detach-key",
        metavar="C-X",
        default=DEFAULT_DETACH,
        help="the key that detaches (default: %(default)s)",
    )


def run_attach(args: argparse.Namespace) -> int:
    try:
        detach = parse_detach_key(args.detach_key)
    except ValueError as e:
        raise InvalidArgument(str(e), field="detach_key") from None
    found = find(args.session, args.host, args.host_dir)
    if not (os.isatty(0) and os.isatty(1)):
        raise InvalidArgument("attach: needs a terminal (stdin and stdout must be a tty)")
    attacher = Attacher(found.paths, found.name, args.session, read_only=args.read_only, detach_key=detach)
    attacher.open()
    outcome = attacher.run()
    if outcome.message:
        print(outcome.message, file=sys.stderr)
    return outcome.status


def add_log_arguments(p: argparse.ArgumentParser) -> None:
    p.description = (
        "Show who typed what into a host's terminal session: every command and input with "
        "its source (person, agent, notebook, panel) and caller; secret input shows as [secret]."
    )
    add_lookup_arguments(p, "the terminal session")
    p.add_argument("--last", type=int, default=None, metavar="N", help="only the last N entries")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _when(at: Any) -> str:
    try:
        return datetime.datetime.fromtimestamp(float(at)).strftime("%H:%M:%S")
    except (TypeError, ValueError, OverflowError):
        return "-"


def _shown(text: str) -> str:
    out = json.dumps(text, ensure_ascii=False)[1:-1]  # control characters as escapes
    return out if len(out) <= 100 else out[:99] + "…"


def run_log(args: argparse.Namespace) -> int:
    found = find(args.session, args.host, args.host_dir)
    conn = Conn(found.paths, {"pid": os.getpid(), "purpose": "log"})
    try:
        rows = conn.call("inputs", {"session_id": args.session, "last": args.last})
    finally:
        conn.close()
    if args.json:
        print(json.dumps(rows, indent=2, ensure_ascii=False))
        return 0
    if not rows:
        print(f"nothing was typed into session {args.session} (host {found.name}) yet")
        return 0
    for r in rows:
        who = str(r.get("source") or "-") + (f" ({r['caller']})" if r.get("caller") else "")
        what = r.get("key") if r.get("key") else _shown(str(r.get("text") or ""))
        job = str(r.get("job_id") or "")[:13]
        print(f"{_when(r.get('at'))}  {r.get('kind', '?'):<9} {who:<28} {job:<13}  {what}")
    return 0


__all__ = ["add_attach_arguments", "add_log_arguments", "run_attach", "run_log"]
