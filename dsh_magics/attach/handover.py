"""The client's side of handing its terminal to the host (host/tty_out.py).

While the person's window has the terminal's size, the host writes the
stream's bytes to the person's terminal itself, so a key's echo does not pass
through this process (benchmarks/README.md, bench_attach, session 37). The
client opens its terminal again for the host (:func:`open_for_host`: its own
open file, so the ``O_NONBLOCK`` the host needs is not the person's shell's),
sends it with the ``watch`` request (:func:`hand`), and takes it back before it
writes anything of its own when leaving (:func:`give_back`). The rules of who
writes when: docs/attach.md, "Who writes to your terminal". Its keyboard goes
the same way (opened again read-only, the second descriptor): the host reads
the keys and keeps the client's rules for them (host/tty_in.py), and the client
no longer reads its terminal.

``DSH_MAGICS_ATTACH_HANDOVER=0`` keeps the terminal in the client (the stream
then comes as ``bytes`` events and the client reads the keys, as on a platform
without ``SCM_RIGHTS``); ``=output`` hands over the output only.
"""

from __future__ import annotations

import json
import os
import select
import signal
import socket
import time
from typing import Any

from ..errors import HostUnavailable, InvalidArgument
from ..host.stream import bytes_prefix
from ..host.tty_out import FD_BYTE, RECEIVE_S
from .link import Conn, Pipe
from .local_tty import RawTerminal

#: How long leaving waits for the host to give the terminal back.
GIVE_BACK_S = 2.0

#: Written before the client's first bytes after the host's: CAN ends any
#: escape sequence a partial write of the host's left open.
CANCEL = b"\x18"


def open_for_host(fd_out: int, fd_in: int) -> list[int]:
    """The local terminal opened again for the host: its output (write-only,
    non-blocking), then its input (read-only, non-blocking) unless
    ``DSH_MAGICS_ATTACH_HANDOVER=output``; none if it cannot be handed over."""
    how = os.environ.get("DSH_MAGICS_ATTACH_HANDOVER", "all")
    if how == "0" or not hasattr(socket, "send_fds"):
        return []
    flags = os.O_NOCTTY | os.O_NONBLOCK | os.O_CLOEXEC
    fds: list[int] = []
    try:
        fds.append(os.open(os.ttyname(fd_out), os.O_WRONLY | flags))
        if how != "output":
            fds.append(os.open(os.ttyname(fd_in), os.O_RDONLY | flags))
    except OSError:
        pass  # what could be opened is handed over
    return fds


def hand(conn: Conn, session: str, fds: list[int], caller: str, detach: bytes) -> int:
    """Start the session's stream on ``conn`` with the terminal ``fds`` handed
    over (the client closes its copies after; a second one: the keys too,
    with the ``detach`` key); how many the host says it took (0: none, the
    stream then goes as ``bytes`` events and the client reads its keys)."""
    args: dict[str, object] = {"session_id": session, "tty": True}
    if len(fds) == 2:
        args.update(keys=True, caller=caller, detach=detach.decode("latin-1"))
    try:
        reply = conn.call("watch", args)
    except InvalidArgument:  # a host that does not know ``tty``
        conn.call("watch", {"session_id": session})
        return 0
    if not (isinstance(reply, dict) and reply.get("tty") == "send"):
        return 0
    sock = conn.link.sock
    socket.send_fds(sock, [FD_BYTE], fds)
    return _took(sock)


def _took(sock: socket.socket) -> int:
    """The host's ``{"type": "tty", "took": N}``, the line right after the
    descriptors. Read a byte at a time: the stream's first lines may follow
    it at once, and they are the poll loop's (``Pipe``), not this read's."""
    line = bytearray()
    sock.settimeout(RECEIVE_S + GIVE_BACK_S)
    try:
        while not line.endswith(b"\n"):
            b = sock.recv(1)
            if not b or len(line) > 4096:
                raise HostUnavailable("the terminal host went away while taking the terminal")
            line += b
    except OSError as e:
        raise HostUnavailable(f"the terminal host went away while taking the terminal ({e})") from None
    finally:
        sock.settimeout(None)
    try:
        event = json.loads(line)["event"]
        took = event["took"]
    except (ValueError, KeyError, TypeError):
        raise HostUnavailable(f"the terminal host answered the hand-over with {bytes(line)[:200]!r}") from None
    if event.get("type") != "tty" or took not in (0, 1, 2):
        raise HostUnavailable(f"the terminal host answered the hand-over with {bytes(line)[:200]!r}")
    return int(took)


def stream(events: Conn, session: str, tty: RawTerminal, caller: str, detach: bytes) -> tuple[Pipe, int]:
    """Start the session's stream on ``events``, with the terminal handed over
    if it can be; how many of its descriptors the host took (0: none, 1: the
    output, 2: the keys too)."""
    fds = open_for_host(tty.fd_out, tty.fd_in)
    handed = 0
    if fds:
        try:  # the stream starts with the terminal handed over (before subscribe: no event in between)
            handed = hand(events, session, fds, caller, detach)
        finally:
            for fd in fds:
                os.close(fd)
    pipe = Pipe(events)
    pipe.bytes_prefix = bytes_prefix(session)
    pipe.send("subscribe", {"types": ["terminal"]})
    if not fds:
        pipe.send("watch", {"session_id": session})  # its reply, then the stream
    return pipe, handed


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
    except (OSError, ValueError, HostUnavailable):
        return  # the connection is gone (or broken: closing it releases): so is the host's copy


def suspend(events: Pipe | None, session: str, tty: RawTerminal, handed: bool, caller: str, detach: bytes) -> list[int]:
    """SIGTSTP (``kill -TSTP``; Ctrl-Z is a key of the session's in raw mode):
    as tmux's client does, take the terminal back from the host, put it back
    in the person's mode and stop; continued (SIGCONT), enter raw mode again
    and ask to hand the terminal over again (its screen first). The
    descriptors to send when the host's reply says "send" (:func:`send_held`);
    the client keeps the terminal until the host says it took it (``tty``)."""
    if handed and events is not None:
        give_back(events, session)
    tty.restore()
    # SIGSTOP, not SIGTSTP again: the kernel drops a SIGTSTP whose action is to
    # stop in an orphaned process group (a client run by ``bash -c`` in a pane).
    os.kill(os.getpid(), signal.SIGSTOP)  # stopped here until continued
    tty.enter()
    if events is None:
        return []
    fds = open_for_host(tty.fd_out, tty.fd_in) if handed else []
    args: dict[str, Any] = {"session_id": session}
    if len(fds) == 2:
        args.update(tty=True, keys=True, caller=caller, detach=detach.decode("latin-1"))
    elif fds:
        args.update(tty=True)
    events.send("watch", args)  # a fresh screen first (the host then holds its writes for it)
    return fds


def send_held(events: Pipe, fds: list[int], value: Any) -> list[int]:
    """The reply to :func:`suspend`'s ``watch``: send the terminal if the
    host said so; the client's copies are closed either way (none left)."""
    try:
        if isinstance(value, dict) and value.get("tty") == "send":
            socket.send_fds(events.sock, [FD_BYTE], fds)
    except OSError:
        pass  # the host is gone, or took nothing: its "tty" says so, or the loop sees the end
    finally:
        for fd in fds:
            os.close(fd)
    return []


__all__ = ["CANCEL", "GIVE_BACK_S", "give_back", "hand", "open_for_host", "send_held", "stream", "suspend"]
