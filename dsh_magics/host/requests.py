"""The host's request dispatch: one request line in, one reply out.

Every row of protocol.OPERATIONS is either a plain call of the engine method
it names or one of the host's own operations below (the ``hooks`` table).
Arguments are checked against the row before an operation sees them.

A request that says ``"reply": "errors"`` is answered only if it fails (an
attach client's keys: it does not wait for them, and a reply it does not need
would wake it once more per key while the key's echo is on its way). A
connection's requests are answered in order, so a later request's reply
says that every earlier one has been done.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import threading
from collections.abc import Callable
from typing import Any, Protocol

from .. import errors, jobs
from ..terminal import Registry, Result
from ..terminal.deadline import Deadline
from ..terminal.requests import ExecRequest
from . import keys, viewers
from . import protocol as P
from .connection import EVENT_TYPES, Connection
from .interest import Interest
from .pages import PageTable
from .stream import ViewerStream
from .tty_in import TtyKeys
from .tty_out import TtyOut, receive

log = logging.getLogger("dsh_magics.host")

#: A result small enough to be sent straight from the terminal's reader thread.
_INLINE_REPLY = 64 * 1024

#: Returned by a handler that has already sent its reply itself.
_SENT = object()


class Served(Protocol):
    """What the dispatch needs of its server (host/server.py's ``HostServer``).

    ``registry`` is the in-process engine the host serves, typed as the
    :class:`Registry` it is: the host also uses what only that backend has
    and the engine contract does not (a person's keyboard,
    ``Registry.person_keys``; a viewer's stream, ``Registry.watch_screen``),
    which are host-internal, not operations of the protocol's table."""

    registry: Registry
    pages: PageTable
    interest: Interest
    max_request: int

    @property
    def stopping(self) -> bool: ...

    def describe(self) -> dict[str, Any]: ...

    def connections(self) -> list[Connection]: ...

    def stop(self, reason: str, *, expected: bool = True) -> None: ...


class Requests:
    """The operations of ``server``'s protocol."""

    def __init__(self, server: Served) -> None:
        self.server = server
        self.registry = server.registry
        self.pages = server.pages
        self.interest = server.interest
        # Operations the host answers itself (or wraps); every other row of
        # protocol.OPERATIONS is a plain call of the engine method it names.
        self._hooks: dict[str, Callable[[Connection, dict[str, Any]], Any]] = {
            "hello": self._op_hello,
            "status": self._op_status,
            "subscribe": self._op_subscribe,
            "detach": self._op_detach,
            "watch": self._op_watch,
            "tty_go": lambda conn, a: self._stream(conn, a).go(a["screen"], a["live"]),
            "tty_bell": lambda conn, a: self._stream(conn, a).bell(),
            "tty_release": lambda conn, a: self._stream(conn, a).release(),
            "shutdown": self._op_shutdown,
            "attach": self._op_attach,
            "type_keys": self._op_type_keys,
            "exec": self._op_exec,
            "jobs": self._op_jobs,
            "page_open": self._op_page_open,
            "page_wait": lambda conn, a: self.pages.wait(a["page"], a["timeout"]),
            "page_close": lambda conn, a: self.pages.close(a["page"]),
        }
        missing = [n for n, o in P.OPERATIONS.items() if o.engine_method is None and n not in self._hooks]
        assert not missing, f"host operations without a handler: {missing}"

    def handle(self, conn: Connection, item: bytes | P.Oversized) -> bytes | None:
        """The reply to one request line (None: no reply, or already sent)."""
        if isinstance(item, P.Oversized):
            return P.error_reply(
                None,
                P.protocol_error(
                    "oversized", f"message of {item.size} bytes exceeds the limit of {self.server.max_request} bytes"
                ),
            )
        if not item.strip():
            return None
        msg_id: Any = None
        try:
            lane = conn.keys
            if lane is not None:
                data = lane.data(item)
                if data is not None:  # the rest of this line was checked with the lane's first
                    msg_id = keys.KEYS_ID
                    if self.server.stopping:
                        raise errors.HostUnavailable("the terminal host is shutting down")
                    lane.keys.press(data)
                    return None
            try:
                msg = json.loads(item)
            except (ValueError, RecursionError):
                raise P.protocol_error("malformed", "message is not valid JSON") from None
            if not isinstance(msg, dict):
                raise P.protocol_error("malformed", "message must be a JSON object")
            msg_id = msg.get("id")
            if msg_id is not None and (isinstance(msg_id, bool) or not isinstance(msg_id, (int, str))):
                msg_id = None
                raise P.protocol_error("malformed", "message id must be an integer or a string")
            version = msg.get("v")
            if version != P.VERSION:
                raise P.protocol_error(
                    "version", f"unsupported protocol version {version!r}; this host speaks version {P.VERSION}"
                )
            name = msg.get("op")
            op = P.OPERATIONS.get(name) if isinstance(name, str) else None
            if op is None:
                raise P.protocol_error("op", f"unknown operation {name!r}")
            args = msg.get("args", {})
            if not isinstance(args, dict):
                raise P.protocol_error("malformed", "args must be a JSON object")
            if self.server.stopping:
                raise errors.HostUnavailable("the terminal host is shutting down")
            conn.msg_id = msg_id
            value = self._perform(conn, op, op.check(args))
            if value is _SENT or msg.get("reply") == P.ERRORS_ONLY:
                return None
            return P.ok_reply(msg_id, value)
        except errors.DshError as e:
            return P.error_reply(msg_id, e)
        except Exception as e:  # noqa: BLE001 - report, log, keep serving
            log.exception("request failed")
            return P.error_reply(msg_id, errors.DshError(f"internal error in the terminal host: {type(e).__name__}: {e}"))

    # operations (arguments already checked against their table row)
    def _perform(self, conn: Connection, op: P.Operation, a: dict[str, Any]) -> Any:
        a = P.capped(op, a)
        viewers.check(conn.client, op.name)
        self.interest.note(conn.peer_pid, op.name, P.noted(a))
        hook = self._hooks.get(op.name)
        if hook is not None:
            return hook(conn, a)
        method = op.engine_method
        assert method is not None
        if "request" in a:  # checked once, by the row: the engine takes it as it is
            return P.TO_WIRE[op.returns](getattr(self.registry, f"run_{method}")(a["request"]))
        return P.TO_WIRE[op.returns](getattr(self.registry, method)(**a))

    def _op_hello(self, conn: Connection, a: dict[str, Any]) -> Any:
        conn.client = dict(a.get("client") or {})
        conn.keys = None  # its lane was checked for the client before (host/keys.py)
        out = self.server.describe()
        out["config"] = self.registry.config.to_dict()
        out["operations"] = sorted(P.OPERATIONS)
        return out

    def _op_type_keys(self, conn: Connection, a: dict[str, Any]) -> Any:
        """A person's keys, through the registry's keyboard for their session
        and caller (``Registry.person_keys``, host-internal: the wire's
        operation is the contract's ``type_keys``), kept as the connection's
        :class:`keys.KeysLane` (its next keys lines of this shape skip the
        general dispatch). Pinned by tests/host/test_table.py::
        test_a_persons_keys_go_through_one_keyboard_per_connection."""
        sid, caller = a["session_id"], a.get("caller")
        lane = conn.keys
        if lane is None or lane.session_id != sid or lane.caller != caller:
            lane = conn.keys = keys.KeysLane(sid, caller, self.registry.person_keys(sid, caller))
        return lane.keys.type(a["data"])

    def _op_status(self, conn: Connection, a: dict[str, Any]) -> Any:
        out = self.server.describe()
        conns = self.server.connections()
        out["terminals"] = [P.info_to_wire(i) for i in self.registry.list()]
        out["clients"] = sorted({c.peer_pid for c in conns if c.subscribed})
        out["connections"] = len(conns)
        out["attached"] = viewers.attached((c.peer_pid, c.client) for c in conns)
        return out

    def _where(self, sid: str, base: str | None) -> str | None:
        """A new terminal starts where the calling kernel is, as in-process."""
        if base and not self.registry.exists(sid) and os.path.isdir(base):
            return base
        return None

    def _op_attach(self, conn: Connection, a: dict[str, Any]) -> Any:
        base = self._where(a["session_id"], a.pop("base_cwd", None))
        if a.get("target") not in (None, "local"):
            base = None  # the kernel's directory is a path on this machine, not there
        if base is not None:
            cwd = a.get("cwd")
            a["cwd"] = os.path.join(base, os.path.expanduser(cwd)) if cwd else base
        return P.info_to_wire(self.registry.attach(**a))

    def _op_exec(self, conn: Connection, a: dict[str, Any]) -> Any:
        request: ExecRequest = a["request"]
        sid = request.session_id
        wait_ms = request.wait_ms  # capped by the table row
        base = self._where(sid, a.get("base_cwd"))
        if base is not None:
            try:
                self.registry.attach(sid, cwd=base)
            except errors.DshError:
                pass  # someone else opened it meanwhile, or base vanished: use the default
        out = self.registry.run_exec(dataclasses.replace(request, wait_ms=None))
        if isinstance(out, Result):
            return {"result": P.result_to_wire(out)}
        if not wait_ms:
            return {"job": P.job_to_wire(out)}
        return self._reply_when_done(conn, out, Deadline.after_ms(wait_ms))

    def _reply_when_done(self, conn: Connection, job: jobs.Job, deadline: Deadline) -> Any:
        """Answer an ``exec`` with ``wait_ms`` from the terminal's reader
        thread the moment the job settles: waking this connection's thread
        first would add a thread switch to every short command's round trip.
        Whoever claims the reply first sends it; a big result is left to
        this thread, so a slow client can never stall a terminal's reader."""
        msg_id = conn.msg_id
        claim = threading.Lock()
        finished = threading.Event()  # set *after* the reply went out

        def on_done(j: jobs.Job) -> None:
            try:
                result = j.result
                if not isinstance(result, Result) or len(result.output) > _INLINE_REPLY:
                    return
                if not claim.acquire(blocking=False):
                    return
                try:
                    conn.send(P.ok_reply(msg_id, {"result": P.result_to_wire(result)}))
                except OSError:
                    pass  # the client went away: nobody is left to answer
            finally:
                finished.set()

        job.add_done_listener(on_done)
        finished.wait(deadline.left_s())
        if not claim.acquire(blocking=False):
            return _SENT
        job.remove_done_listener(on_done)
        if job.done and isinstance(job.result, Result):
            return {"result": P.result_to_wire(job.result)}
        return {"job": P.job_to_wire(job)}

    def _op_jobs(self, conn: Connection, a: dict[str, Any]) -> Any:
        table = self.registry.jobs
        owner = a.get("owner")
        found: list[jobs.Job] = table.running(owner) if a.get("running") else table.all()
        if not a.get("running") and owner is not None:
            found = [j for j in found if j.owner == owner]
        with_result = a.get("results", True)
        return [P.job_to_wire(j, with_result=with_result) for j in found]

    def _op_page_open(self, conn: Connection, a: dict[str, Any]) -> Any:
        """A one-time answer page for the prompt the job waits at, served by
        this process (it owns the terminal); it closes when the prompt goes
        away or the process that asked for it exits."""
        return self.pages.open(a["session_id"], a["job_id"], conn.peer_pid)

    def _op_subscribe(self, conn: Connection, a: dict[str, Any]) -> Any:
        """Start (or re-filter) this connection's event stream. ``types``
        limits it to some event types: a client without listeners of its
        own only needs ``job_done``, and every event it does not get is a
        wake-up saved on both sides."""
        types = a.get("types")
        if types is not None:
            unknown = [t for t in types if t not in EVENT_TYPES]
            if unknown:
                raise errors.InvalidArgument(f"unknown event type(s): {unknown!r}; known: {', '.join(EVENT_TYPES)}")
            conn.types = frozenset(types)
        conn.start_sender()
        return sorted(conn.types)

    def _op_watch(self, conn: Connection, a: dict[str, Any]) -> Any:
        """Stream a session's output to this connection (host/stream.py). The
        reply goes out first: the stream's first screen follows it. With
        ``tty``, the reply is ``{"tty": "send"}`` and the client's terminal
        comes next, as one byte with ``SCM_RIGHTS`` (host/tty_out.py), and the
        host says what it took (``{"type": "tty", "took": N}``: 0, the output,
        or the keys too) before anything of the stream; the
        event sender starts only after it, so nothing else is written between.
        A watch again on a stream with a handed terminal starts it again (a
        screen first) and keeps the terminal."""
        sid = a["session_id"]
        self.registry.info(sid)  # NO_SUCH_SESSION before anything starts
        detach = self._detach_key(a) if a.get("tty") else None  # (checked before an old stream goes)
        keys = self.registry.person_keys(sid, a.get("caller")) if detach and not viewers.read_only(conn.client) else None
        old = conn.streams.pop(sid, None)
        if old is not None:
            if old.tty is not None and old.tty.open and not a.get("tty"):
                conn.streams[sid] = old
                conn.send(P.ok_reply(conn.msg_id, True))
                self._start(conn, old, old.restart)
                return _SENT
            old.close()
        stream = ViewerStream(sid, conn.wake, conn.send_stream)
        tty_in = None
        if a.get("tty"):
            conn.send(P.ok_reply(conn.msg_id, {"tty": "send"}))
            fds = receive(conn.sock)
            if len(fds) == 2 and detach:
                tty_in = TtyKeys(fds[1], stream, self.registry, keys, detach,
                                 lambda event: conn.send(P.event_line({**event, "session_id": sid})))  # fmt: skip
            elif len(fds) == 2:
                os.close(fds.pop())
            if fds:
                stream.hand(TtyOut(fds[0]), tty_in)
            # The connection's from here, before anything can fail or close it:
            # its close closes the terminal's copies (tests/attach/test_handover_races.py).
            conn.streams[sid] = stream
            try:
                # What the host took (attach/handover.py): before the stream, so the
                # client knows whether it still reads its keys and writes bytes.
                conn.send(P.event_line({"type": "tty", "session_id": sid, "took": len(fds)}))
            except OSError:  # the client went away with its terminal just handed (or the host closed it)
                conn.close()
                stream.close()  # (a close before the line above did not see it)
                return _SENT
            conn.start_sender()
        else:
            conn.streams[sid] = stream
            conn.start_sender()
            conn.send(P.ok_reply(conn.msg_id, True))
        if not conn.closed:
            self._start(conn, stream, stream.start)
        if conn.closed:  # closed meanwhile (Connection.close may not have seen this stream)
            stream.close()
        if tty_in is not None:
            tty_in.start()  # (a closed one does not start)
        return _SENT

    @staticmethod
    def _detach_key(a: dict[str, Any]) -> bytes | None:
        """``watch``'s ``keys``: the detach key the host then watches for (host/tty_in.py)."""
        if not a.get("keys"):
            return None
        key = (a.get("detach") or "").encode("latin-1", "replace")
        if len(key) != 1 or key[0] >= 0x20 or key in (b"\x03", b"\r", b"\x1b"):
            raise errors.InvalidArgument("detach must be one control character (not Ctrl-C, Enter or Esc)", field="detach")
        return key

    def _start(self, conn: Connection, stream: ViewerStream, start: Callable[[Registry], None]) -> None:
        try:
            start(self.registry)
        except errors.DshError as e:  # closed meanwhile: the viewer hears it as closed
            log.info("watching %s for pid %s failed: %s", stream.session_id, conn.peer_pid, e)
            conn.streams.pop(stream.session_id, None)
            stream.close()
            conn.push({"type": "terminal", "session_id": stream.session_id, "status": "closed"})

    def _stream(self, conn: Connection, a: dict[str, Any]) -> ViewerStream:
        """This connection's stream of the session (``tty_*``)."""
        stream = conn.streams.get(a["session_id"])
        if stream is None:
            raise errors.InvalidArgument(f"this connection does not watch session {a['session_id']!r}", field="session_id")
        return stream

    def _op_detach(self, conn: Connection, a: dict[str, Any]) -> Any:
        log.info("client pid %s detached; its terminals keep running", conn.peer_pid)
        return True

    def _op_shutdown(self, conn: Connection, a: dict[str, Any]) -> Any:
        self.server.stop(f"stop requested by pid {conn.peer_pid}")
        return {"pid": os.getpid()}


__all__ = ["Requests", "Served"]
