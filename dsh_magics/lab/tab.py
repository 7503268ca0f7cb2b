"""The output that opens a dsh-magics terminal in a JupyterLab terminal tab, shared by
``%bash_terminal`` and the panel's *Terminal tab* button."""

from __future__ import annotations

import html
import time
import uuid
from typing import Any

from ..errors import HostUnavailable, NoSuchSession

MIME = "application/vnd.dsh-magics.terminal+json"
IN_PROCESS = (
    "a JupyterLab terminal tab needs this kernel's terminals in a terminal host, and they are "
    'in-process: set DSH_MAGICS_HOST=1 (or c.BashMagics.host = "on") and restart the kernel'
)


def terminal_tab(
    engine: Any, session: str, default: str, read_only: bool = False
) -> dict[str, Any]:
    """Start (or reuse) the Lab terminal attached to ``session`` and return the output that
    opens its tab. ``default`` (this notebook's terminal) is opened if it does not run yet;
    another session must exist. Shared by the magic and the panel's button."""
    from ..host.client import HostClient
    from ..terminal import validate_session_id
    from .terminals import find_server, open_terminal

    validate_session_id(session)
    if not isinstance(engine, HostClient):
        raise HostUnavailable(IN_PROCESS)
    if session == default:
        engine.attach(session)
    elif not engine.exists(session):
        names = ", ".join(sorted(t.session_id for t in engine.list())) or "none"
        raise NoSuchSession(
            f"no terminal {session!r} in host {engine.paths.name} (terminals: {names})"
        )
    server = find_server()
    term = open_terminal(server, session, engine.paths.name, engine.paths.dir, read_only)
    return bundle(term.name, session, engine.paths.name, read_only)


def bundle(name: str, session: str, host: str, read_only: bool) -> dict[str, Any]:
    """The output: the extension's MIME type, and text for a front end without it."""
    cmd = f"dsh-magics attach {session} --host {host}" + (" --read-only" if read_only else "")
    text = (
        f"JupyterLab terminal {name} runs `{cmd}`. Without the dsh-magics JupyterLab extension "
        "(python -m dsh_magics.lab install, then reload the page), open it from the Running "
        "panel (Terminals), or run that command in any terminal."
    )
    note = f"runs {cmd}" + ("; watching only" if read_only else "; Ctrl-] closes it")
    page = (
        f"<div class='dsh-terminal-link'>JupyterLab terminal <code>{html.escape(name)}</code> runs "
        f"<code>{html.escape(cmd)}</code>. Open it from the Running panel (Terminals), or run that "
        "command in any terminal. The dsh-magics JupyterLab extension "
        "(<code>python -m dsh_magics.lab install</code>, then reload the page) opens it as a tab "
        "from here.</div>"
    )
    data = {
        "name": name,
        "session": session,
        "text": note,
        "nonce": uuid.uuid4().hex,
        "created_ms": int(time.time() * 1000),
    }
    return {MIME: data, "text/plain": text, "text/html": page}
