"""``%bash_panel [--session S] [--lines N]``: open the terminal panel from a notebook line.

Apart from ``magics.py``, so it is an independent adapter; the extension calls :func:`register`.
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic_arguments import argument, magic_arguments

from ..notebook.magic_args import parse, session_arg, usage_errors
from .panel_view import DEFAULT_TAIL

MAGIC_NAME = "bash_panel"


@magic_arguments()
@session_arg("Terminal to select (default: this notebook's).")
@argument(
    "--lines",
    "-n",
    type=int,
    default=DEFAULT_TAIL,
    help=f"how many retained lines the output pane shows (default {DEFAULT_TAIL})",
)
@usage_errors
def bash_panel(line: str = "") -> Any:
    """Show the terminal panel: every terminal of this kernel, the selected
    terminal's live output, recent jobs, and buttons to send a command as a
    job, interrupt, attach, recreate and close.

    Every action travels over the kernel's widget comm channel; the panel
    opens no port and no HTTP listener.
    """
    from .panel import panel

    args = parse(bash_panel, line)
    return panel(args.session, lines=args.lines)


def register(ipython: Any) -> None:
    """Register ``%bash_panel`` (called by ``%load_ext dsh_magics``)."""
    ipython.register_magic_function(bash_panel, magic_kind="line", magic_name=MAGIC_NAME)


def unregister(ipython: Any) -> None:
    """Remove ``%bash_panel`` (called on ``%unload_ext`` / ``%reload_ext``)."""
    table = ipython.magics_manager.magics["line"]
    if table.get(MAGIC_NAME) is not None:
        del table[MAGIC_NAME]
