"""The client's side of handing its terminal to the host (host/tty_out.py).

While the person's window has the terminal's size, the host writes the
stream's bytes to the person's terminal itself, so a key's echo does not pass
through this process (benchmarks/README.md, bench_attach, session 37). The
client opens its terminal again for the host (:func:`open_for_host`: its own
open file, so the ``O_NONBLOCK`` the host needs is not the person's shell's),
sends it with the ``watch`` request (:func:`hand`), and takes it back before it
writes anything of its own when leaving (:func:`give_back`). The rules of who
writes when: docs/attach.md, "Who writes to your terminal".

``DSH_MAGICS_ATTACH_HANDOVER=0`` keeps the terminal in the client (the stream
then comes as ``bytes`` events, as on a platform without ``SCM_RIGHTS``).
"""

from __future__ import annotations

import os
import select
import socket
import time

from ..errors import InvalidArgument
from ..host.tty_out import FD_BYTE
from .link import Conn, Pipe

#: How long leaving waits for the host to give the terminal back.
GIVE_BACK_S = 2.0

#: Written before the client's first bytes after the host's: CAN ends any
#: escape sequence a partial write of the host's left open.
CANCEL = b"\x18"


def open_for_host(fd_out: int) -> int | None:
    """The local terminal opened again (write-only, non-blocking), or None if
    it cannot be handed over."""
    if os.environ.get("DSH_MAGICS_ATTACH_HANDOVER", "1") == "0" or not hasattr(socket, "send_fds"):
        return None
    try:
        return os.open(os.ttyname(fd_out), os.O_WRONLY | os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None


def hand(conn: Conn, session: str, fd: int) -> bool:
    """Start the session's stream on ``conn`` with the terminal ``fd`` handed
    over (the client closes its copy after); False: the host did not take it
    (the stream then still started, as ``bytes`` events)."""
    try:
        reply = conn.call("watch", {"session_id": session, "tty": True})
    except InvalidArgument:  # a host that does not know ``tty``
        conn.call("watch", {"session_id": session})
        return False
    if not (isinstance(reply, dict) and reply.get("tty") == "send"):
        return False
    socket.send_fds(conn.link.sock, [FD_BYTE], [fd])
    return True


def give_back(events: Pipe, session: str) -> None:
    """Ask the host to stop writing to the terminal and close its copy, and
    wait (at most :data:`GIVE_BACK_S`) for its answer: after it nothing of the
    host's reaches the terminal. A host that is gone writes nothing anyway."""
    try:
        events.send("tty_release", {"session_id": session})
        deadline = time.monotonic() + GIVE_BACK_S
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return
            fd = events.fileno()
            ready, writable, _ = select.select([fd], [fd] if events.unsent else [], [], left)
            if writable:
                events.flush()
            if ready:
                msgs = events.read()
                if msgs is None or any(isinstance(m, dict) and m.get("op") == "tty_release" for m in msgs):
                    return
    except (OSError, ValueError):
        return  # the connection is gone: so is the host's copy


__all__ = ["CANCEL", "GIVE_BACK_S", "give_back", "hand", "open_for_host"]
