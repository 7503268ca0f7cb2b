"""``%bash_terminal [--session S] [--read-only]``: the terminal as a JupyterLab terminal tab.

The kernel asks its Jupyter server for a named Lab terminal running ``dsh-magics attach``
(``dsh_magics.lab.terminals``) and shows an output the front-end extension renders as a
button that opens the tab (and opens it once by itself). Without the extension, the
output says where to find the terminal. Registered by the extension like ``%bash_panel``.
"""

from __future__ import annotations

from typing import Any

from IPython.core.magic_arguments import argument, magic_arguments

from ..lab.tab import terminal_tab
from ..notebook.magic_args import parse, session_arg, usage_errors

MAGIC_NAME = "bash_terminal"


@magic_arguments()
@session_arg("Terminal to open (default: this notebook's).")
@argument("--read-only", action="store_true", help="a tab that watches without typing")
@usage_errors
def bash_terminal(line: str = "") -> None:
    """Open the terminal in a JupyterLab terminal tab: JupyterLab's own terminal
    running ``dsh-magics attach`` on it. What you type there is a job with
    ``source: person``; what the notebook and agents run appears in the tab."""
    from .panel import notebook_context

    args = parse(bash_terminal, line)
    engine, default = notebook_context()
    session = args.session if args.session is not None else default
    from IPython.display import display

    display(terminal_tab(engine, session, default, args.read_only), raw=True)


def register(ipython: Any) -> None:
    """Register ``%bash_terminal`` (called by ``%load_ext dsh_magics``)."""
    ipython.register_magic_function(bash_terminal, magic_kind="line", magic_name=MAGIC_NAME)


def unregister(ipython: Any) -> None:
    """Remove ``%bash_terminal`` (called on ``%unload_ext`` / ``%reload_ext``)."""
    table = ipython.magics_manager.magics["line"]
    if table.get(MAGIC_NAME) is not None:
        del table[MAGIC_NAME]
