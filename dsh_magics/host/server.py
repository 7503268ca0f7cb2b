""":class:`HostServer`: one process that owns a :class:`Registry` and serves it over a Unix socket.

Thread per connection; nothing a peer sends can crash it (docs/host.md, "Internals").
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import signal
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from .. import errors, jobs
from ..terminal import Engine, Registry, Result
from ..terminal.core import fdwait
from ..terminal.local import procs
from . import idle, viewers
from . import protocol as P
from .interest import Interest
from .pages import PageTable
from .runtime import FileLock, HostPaths, remove_lock, remove_own_log
from .stream import ViewerStream

log = logging.getLogger("dsh_magics.host")

#: Longest a single blocking request may hold its connection; clients loop.
MAX_BLOCK_SECONDS = P.MAX_BLOCK_SECONDS

#: Events queued for one subscriber before it is considered stuck and dropped.
MAX_QUEUED_EVENTS = 20_000

_PEERCRED = struct.Struct("3i")

#: A result small enough to be sent straight from the terminal's reader thread.
_INLINE_REPLY = 64 * 1024

#: Returned by a handler that has already sent its reply itself.
_SENT = object()

EVENT_TYPES = ("output", "job_started", "job_done", "terminal")
#: The subscription of a client without listeners: its job stand-ins only.
_SETTLES_ONLY = frozenset(("job_done",))

#: How often an idle host checks that its socket file is still its own
#: (seconds; ``DSH_MAGICS_HOST_SOCKET_CHECK`` overrides it, for tests).
SOCKET_CHECK = float(os.environ.get("DSH_MAGICS_HOST_SOCKET_CHECK") or 30.0)

#: How long the event sender lets a burst gather before writing it.
EVENT_GATHER = 0.002

#: Least time between two ``output`` events for one session on one connection.
OUTPUT_INTERVAL = 0.005


class _Conn:
    """One client connection: its socket, a write lock and (once it has
    subscribed) an event queue with per-session coalescing of ``output``."""

    def __init__(self, host: HostServer, sock: socket.socket, peer: tuple[int, int, int]) -> None:
        self.host = host
        self.sock = sock
        self.peer_pid, self.peer_uid, _ = peer
        self.wlock = threading.Lock()
        self.closed = False
        self.subscribed = False
        self.types: frozenset[str] = frozenset(EVENT_TYPES)
        self.msg_id: Any = None
        self._events: deque[dict[str, Any]] = deque()
        self._pending_output: dict[Any, None] = {}  # sessions with unsent output, in order
        self._output_sent: dict[Any, float] = {}
        self._ev_cond = threading.Condition()
        self.client: dict[str, Any] = {}
        self.streams: dict[str, ViewerStream] = {}  # sessions it watches (host/stream.py)
        self._unsent = b""  # the part of a stream write the socket did not take (wake)

    def send(self, data: bytes) -> None:
        with self.wlock:
            self.sock.sendall(data)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        with self._ev_cond:
            self._ev_cond.notify_all()
        for stream in list(self.streams.values()):
            stream.stop()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        try:
            self.sock.close()
        except OSError:
            pass

    # -- events --------------------------------------------------------------
    def wake(self) -> None:
        """A viewer stream has something to send. Called on a terminal's
        reader thread: it writes the stream itself when nothing is being sent
        and the socket takes it without waiting (a key's echo then skips a
        thread switch), and otherwise leaves it to the sender thread. Stream
        events are only taken with ``wlock`` held, so they go out in order."""
        if self.wlock.acquire(blocking=False):
            try:
                if not self._unsent and not self.closed:
                    data = self._stream_bytes()
                    try:
                        sent = self.sock.send(data, socket.MSG_DONTWAIT)
                    except BlockingIOError:
                        sent = 0
                    except OSError:
                        sent = len(data)  # the connection is gone; its sender notices and closes
                    self._unsent = data[sent:]
            finally:
                self.wlock.release()
            if not self._unsent:
                return
        with self._ev_cond:
            self._ev_cond.notify()

    def _stream_bytes(self) -> bytes:
        """The streams' queued events as wire lines (``wlock`` held)."""
        out: list[bytes] = []
        for stream in list(self.streams.values()):
            if stream.pending:
                out.extend(P.event_line(e) for e in stream.take())
        return b"".join(out)

    def _stream_waiting(self) -> bool:
        return bool(self._unsent) or any(s.pending for s in list(self.streams.values()))

    def start_sender(self) -> None:
        if not self.subscribed:
            self.subscribed = True
            threading.Thread(target=self.sender, name=f"dsh-host-events-{self.peer_pid}", daemon=True).start()

    def push(self, event: dict[str, Any]) -> None:
        """Called on engine threads: enqueue only, never block or write."""
        if event.get("type") not in self.types:
            return
        if self.types == _SETTLES_ONLY and not self.host.interest.wants(self.peer_pid, event.get("session_id")):
            return  # a job this client never asked about (dsh_magics/host/interest.py)
        with self._ev_cond:
            if event.get("type") == "output":
                sid = event.get("session_id")
                if sid in self._pending_output:
                    return  # one pending "output" per session says it all
                self._pending_output[sid] = None
            else:
                if len(self._events) >= MAX_QUEUED_EVENTS:
                    log.warning("dropping subscriber pid %s: %d events unread", self.peer_pid, len(self._events))
                    threading.Thread(target=self.close, daemon=True).start()
                    return
                sid = event.get("session_id")
                if sid in self._pending_output:
                    # Output that came before this event is said before it, and what
                    # comes after it, after (pinned for both backends by
                    # tests/contract/test_contract.py::test_subscribe_delivers_job_and_output_events).
                    del self._pending_output[sid]
                    self._events.append({"type": "output", "session_id": sid})
                self._events.append(event)
            self._ev_cond.notify()

    def _take(self) -> list[dict[str, Any]] | None:
        """Wait for events to send. ``output`` for a session goes out at once,
        then at most every :data:`OUTPUT_INTERVAL` seconds: a chatty job
        produces a few hundred PTY reads per second, and one wake-up per
        interval tells a follower just as much."""
        with self._ev_cond:
            while not self.closed and not self._events and not self._pending_output:
                if self._stream_waiting():
                    return []  # a viewer's stream waits for nothing (sent by sender())
                self._ev_cond.wait()
            if self.closed:
                return None
            if self._stream_waiting():
                return []
        # Events come in bursts (a short command: job_started, output,
        # job_done within a millisecond). Gathering them for a moment makes
        # one write and one wake-up of the client instead of three, and keeps
        # that work off the critical path of the command's own reply.
        time.sleep(EVENT_GATHER)
        with self._ev_cond:
            while True:
                if self.closed:
                    return None
                now = time.monotonic()
                due = [
                    sid for sid in self._pending_output
                    if now - self._output_sent.get(sid, 0.0) >= OUTPUT_INTERVAL
                ]  # fmt: skip
                if due or self._events:
                    break
                wait = None
                if self._pending_output:
                    wait = min(self._output_sent[sid] + OUTPUT_INTERVAL - now for sid in self._pending_output)
                self._ev_cond.wait(wait)
            batch: list[dict[str, Any]] = []
            while self._events and len(batch) < 256:
                event = self._events.popleft()
                if event.get("type") == "output":
                    self._output_sent[event.get("session_id")] = now
                batch.append(event)
            if not self._events:
                # Pending output is newer than every queued event: it goes last.
                for sid in due:
                    if sid in self._pending_output:
                        del self._pending_output[sid]
                        self._output_sent[sid] = now
                        batch.append({"type": "output", "session_id": sid})
            return batch

    def sender(self) -> None:
        while True:
            batch = self._take()
            if batch is None:
                return
            try:
                with self.wlock:
                    data = self._unsent + b"".join(P.event_line(P.event_to_wire(e)) for e in batch)
                    self._unsent = b""
                    self.sock.sendall(data + self._stream_bytes())
            except OSError:
                self.close()
                return


class HostServer:
    """Serve ``registry`` on the Unix socket of ``paths``.

    ``watch_pid``: the Jupyter server whose life this host follows; when it
    exits (seen through a pidfd, so immediately and without polling) the host
    closes every terminal and exits too.
    """

    def __init__(
        self,
        paths: HostPaths,
        *,
        watch_pid: int | None = None,
        registry: Engine | None = None,
        max_request: int = P.MAX_REQUEST,
        idle_timeout: float | None = None,
    ) -> None:
        self.paths = paths
        self.watch_pid = watch_pid
        self.registry: Engine = registry if registry is not None else Registry()
        self.max_request = max_request
        self.instance = secrets.token_hex(8)
        self.started_at = time.time()
        self._listener: socket.socket | None = None
        self._socket_ino = 0
        self._conns: set[_Conn] = set()
        self._conns_lock = threading.Lock()
        self._stop_r, self._stop_w = os.pipe()
        self._stopping = threading.Event()
        self.stop_reason = ""
        self.expected_stop = True
        self._unsubscribe: Callable[[], None] | None = None
        self.pages = PageTable(self.registry, procs.alive)
        self.interest = Interest(self._owner_of)
        self.idle = idle.IdleClock(idle_timeout)
        # Operations the host answers itself (or wraps); every other row of
        # protocol.OPERATIONS is a plain call of the engine method it names.
        self._hooks: dict[str, Callable[[_Conn, dict[str, Any]], Any]] = {
            "hello": self._op_hello,
            "status": self._op_status,
            "subscribe": self._op_subscribe,
            "detach": self._op_detach,
            "watch": self._op_watch,
            "shutdown": self._op_shutdown,
            "attach": self._op_attach,
            "exec": self._op_exec,
            "jobs": self._op_jobs,
            "page_open": self._op_page_open,
            "page_wait": lambda conn, a: self.pages.wait(a["page"], a["timeout"]),
            "page_close": lambda conn, a: self.pages.close(a["page"]),
        }
        missing = [n for n, o in P.OPERATIONS.items() if o.engine_method is None and n not in self._hooks]
        assert not missing, f"host operations without a handler: {missing}"

    # ------------------------------------------------------------------
    # start and stop
    def bind(self) -> None:
        """Create the listening socket (mode 0600, inside the 0700 directory)."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            sock.bind(self.paths.socket)
        finally:
            os.umask(old)
        os.chmod(self.paths.socket, 0o600)
        sock.listen(128)
        self._listener = sock
        self._socket_ino = os.stat(self.paths.socket).st_ino
        self.paths.write_info(self.describe())

    def _socket_is_ours(self) -> bool:
        try:
            return os.stat(self.paths.socket).st_ino == self._socket_ino
        except OSError:
            return False

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.paths.name,
            "pid": os.getpid(),
            "uid": os.getuid(),
            "instance": self.instance,
            "version": P.VERSION,
            "socket": self.paths.socket,
            "watch_pid": self.watch_pid,
            "started_at": self.started_at,
        }

    def stop(self, reason: str, *, expected: bool = True) -> None:
        """Ask the serving loop to end (safe from any thread or a signal
        handler). An unexpected end keeps the host's log for diagnosis."""
        if not self.stop_reason:
            self.stop_reason = reason
            self.expected_stop = expected
        self._stopping.set()
        try:
            os.write(self._stop_w, b"x")
        except OSError:
            pass

    def serve_forever(self) -> str:
        """Accept connections until stopped or the watched server exits.

        Returns the reason. On the way out every terminal is closed with the
        engine's orphan-free close and the socket and info files are removed.
        """
        assert self._listener is not None, "bind() first"
        self._unsubscribe = self.registry.subscribe(self._fan_out)
        watch_fd = self._open_watch()
        try:
            if self.watch_pid is not None and watch_fd is None and not procs.alive(self.watch_pid):
                self.stop(f"the watched process {self.watch_pid} is gone")
            while not self._stopping.is_set():
                fds: list[int] = [self._listener.fileno(), self._stop_r]
                if watch_fd is not None:
                    fds.append(watch_fd)
                timeout = SOCKET_CHECK if watch_fd is not None or self.watch_pid is None else 1.0
                left = self._idle_left()
                if left is not None and left <= 0:
                    self.stop(
                        f"idle for {idle.describe(self.idle.timeout or 0)}: no client, no attached person "
                        f"and no running job ({idle.ENV_IDLE} or --idle-timeout sets this time)",
                        expected=False,  # keeps the log that says so (docs/host.md, "Idle policy")
                    )
                    break
                if self.idle.timeout is not None:
                    timeout = min(timeout, self.idle.timeout if left is None else left)
                try:
                    ready = fdwait.readable(fds, timeout)
                except InterruptedError:
                    continue
                if not ready and not self._socket_is_ours():
                    # Nobody can reach us any more (the file was deleted, or a
                    # newer host took the name): end rather than linger (pinned by
                    # tests/host/test_lifecycle.py::test_host_whose_socket_is_deleted_ends).
                    self.stop(f"the socket {self.paths.socket} was removed or replaced", expected=False)
                    break
                if watch_fd is not None and watch_fd in ready:
                    self.stop(f"the Jupyter server (pid {self.watch_pid}) exited")
                    break
                if watch_fd is None and self.watch_pid is not None and not procs.alive(self.watch_pid):
                    self.stop(f"the Jupyter server (pid {self.watch_pid}) exited")
                    break
                if self._listener.fileno() in ready:
                    self._accept()
        finally:
            if watch_fd is not None:
                os.close(watch_fd)
            self._shutdown()
        return self.stop_reason

    def _idle_left(self) -> float | None:
        with self._conns_lock:
            busy = bool(self._conns)
        return self.idle.remaining(busy or bool(self.registry.jobs.running()))

    def _open_watch(self) -> int | None:
        if self.watch_pid is None:
            return None
        try:
            return os.pidfd_open(self.watch_pid)
        except ProcessLookupError:
            self.stop(f"the watched process {self.watch_pid} is gone")
            return None
        except (AttributeError, OSError):
            return None  # no pidfd: fall back to polling once a second

    def _shutdown(self) -> None:
        log.info("host stopping: %s", self.stop_reason or "stopped")
        if self._unsubscribe is not None:
            self._unsubscribe()
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()
        self._remove_files()
        self.pages.close_all()
        # Stop taking requests first, so no terminal is opened behind our back,
        # then close every terminal (twice: a request already inside the
        # engine may have opened one while the first pass ran).
        with self._conns_lock:
            conns = list(self._conns)
        for c in conns:
            c.close()
        for _ in range(2):
            try:
                n = self.registry.close_all()
                if n:
                    log.info("closed %d terminal(s)", n)
            except Exception:  # noqa: BLE001 - best effort, keep going
                log.exception("closing terminals failed")
        for fd in (self._stop_r, self._stop_w):
            try:
                os.close(fd)
            except OSError:
                pass

    def _remove_files(self) -> None:
        # Only our own files: a newer host may already have replaced them.
        info = self.paths.read_info()
        if info is not None and info.get("instance") != self.instance:
            return
        for path in (self.paths.socket, self.paths.info):
            try:
                os.unlink(path)
            except OSError:
                pass

    # ------------------------------------------------------------------
    # connections
    def _accept(self) -> None:
        assert self._listener is not None
        try:
            sock, _ = self._listener.accept()
        except OSError:
            return
        try:
            raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _PEERCRED.size)
            peer = _PEERCRED.unpack(raw)
        except OSError:
            sock.close()
            return
        if peer[1] != os.getuid():
            log.warning("refused a connection from pid %s uid %s", peer[0], peer[1])
            err = errors.HostUnavailable(
                f"connection refused: this terminal host serves uid {os.getuid()} only, "
                f"and the peer runs as uid {peer[1]}",
                peer_uid=peer[1],
            )
            try:
                sock.settimeout(1.0)
                sock.sendall(P.error_reply(None, err))
            except OSError:
                pass
            sock.close()
            return
        conn = _Conn(self, sock, peer)
        self.idle.touch()
        with self._conns_lock:
            self._conns.add(conn)
        threading.Thread(target=self._serve_conn, args=(conn,), name=f"dsh-host-conn-{peer[0]}", daemon=True).start()

    def _serve_conn(self, conn: _Conn) -> None:
        reader = P.LineReader(conn.sock, self.max_request)
        try:
            for item in reader:
                if self._stopping.is_set():
                    break
                reply = self._handle_item(conn, item)
                if reply is not None:
                    conn.send(reply)
        except OSError:
            pass
        except Exception:  # noqa: BLE001 - a connection thread must never take the host down
            log.exception("connection from pid %s failed", conn.peer_pid)
        finally:
            conn.close()
            with self._conns_lock:
                self._conns.discard(conn)
                last = not any(c.peer_pid == conn.peer_pid for c in self._conns)
            if last:
                self.interest.forget(conn.peer_pid)
            self.idle.touch()

    def _handle_item(self, conn: _Conn, item: bytes | P.Oversized) -> bytes | None:
        if isinstance(item, P.Oversized):
            return P.error_reply(
                None,
                P.protocol_error(
                    "oversized", f"message of {item.size} bytes exceeds the limit of {self.max_request} bytes"
                ),
            )
        if not item.strip():
            return None
        msg_id: Any = None
        try:
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
            if self._stopping.is_set():
                raise errors.HostUnavailable("the terminal host is shutting down")
            conn.msg_id = msg_id
            value = self._perform(conn, op, op.check(args))
            if value is _SENT:
                return None
            return P.ok_reply(msg_id, value)
        except errors.DshError as e:
            return P.error_reply(msg_id, e)
        except Exception as e:  # noqa: BLE001 - report, log, keep serving
            log.exception("request failed")
            return P.error_reply(msg_id, errors.DshError(f"internal error in the terminal host: {type(e).__name__}: {e}"))

    # ------------------------------------------------------------------
    # events
    def _fan_out(self, event: dict[str, Any]) -> None:
        self.idle.touch()
        with self._conns_lock:
            subs = [c for c in self._conns if c.subscribed and not c.closed]
        for c in subs:
            c.push(event)

    # ------------------------------------------------------------------
    # operations (arguments already checked against their table row)
    def _perform(self, conn: _Conn, op: P.Operation, a: dict[str, Any]) -> Any:
        a = P.capped(op, a)
        viewers.check(conn.client, op.name)
        self.interest.note(conn.peer_pid, op.name, a)
        hook = self._hooks.get(op.name)
        if hook is not None:
            return hook(conn, a)
        method = op.engine_method
        assert method is not None
        return P.TO_WIRE[op.returns](getattr(self.registry, method)(**a))

    def _owner_of(self, job_id: str) -> str | None:
        try:
            return self.registry.job(job_id).owner
        except errors.DshError:
            return None

    def _op_hello(self, conn: _Conn, a: dict[str, Any]) -> Any:
        conn.client = dict(a.get("client") or {})
        out = self.describe()
        out["config"] = self.registry.config.to_dict()
        out["operations"] = sorted(P.OPERATIONS)
        return out

    def _op_status(self, conn: _Conn, a: dict[str, Any]) -> Any:
        out = self.describe()
        with self._conns_lock:
            conns = list(self._conns)
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

    def _op_attach(self, conn: _Conn, a: dict[str, Any]) -> Any:
        base = self._where(a["session_id"], a.pop("base_cwd", None))
        if a.get("target") not in (None, "local"):
            base = None  # the kernel's directory is a path on this machine, not there
        if base is not None:
            cwd = a.get("cwd")
            a["cwd"] = os.path.join(base, os.path.expanduser(cwd)) if cwd else base
        return P.info_to_wire(self.registry.attach(**a))

    def _op_exec(self, conn: _Conn, a: dict[str, Any]) -> Any:
        sid = a["session_id"]
        wait_ms = a.get("wait_ms")  # capped by the table row
        base = self._where(sid, a.get("base_cwd"))
        if base is not None:
            try:
                self.registry.attach(sid, cwd=base)
            except errors.DshError:
                pass  # someone else opened it meanwhile, or base vanished: use the default
        out = self.registry.exec(
            sid, a["command"], tty=bool(a.get("tty")), source=a.get("source"), caller=a.get("caller")
        )
        if isinstance(out, Result):
            return {"result": P.result_to_wire(out)}
        if not wait_ms:
            return {"job": P.job_to_wire(out)}
        return self._reply_when_done(conn, out, wait_ms / 1000.0)

    def _reply_when_done(self, conn: _Conn, job: jobs.Job, timeout: float) -> Any:
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
                    pass
            finally:
                finished.set()

        job.add_done_listener(on_done)
        finished.wait(timeout)
        if not claim.acquire(blocking=False):
            return _SENT
        job.remove_done_listener(on_done)
        if job.done and isinstance(job.result, Result):
            return {"result": P.result_to_wire(job.result)}
        return {"job": P.job_to_wire(job)}

    def _op_jobs(self, conn: _Conn, a: dict[str, Any]) -> Any:
        table = self.registry.jobs
        owner = a.get("owner")
        found: list[jobs.Job] = table.running(owner) if a.get("running") else table.all()
        if not a.get("running") and owner is not None:
            found = [j for j in found if j.owner == owner]
        with_result = a.get("results", True)
        return [P.job_to_wire(j, with_result=with_result) for j in found]

    def _op_page_open(self, conn: _Conn, a: dict[str, Any]) -> Any:
        """A one-time answer page for the prompt the job waits at, served by
        this process (it owns the terminal); it closes when the prompt goes
        away or the process that asked for it exits."""
        return self.pages.open(a["session_id"], a["job_id"], conn.peer_pid)

    def _op_subscribe(self, conn: _Conn, a: dict[str, Any]) -> Any:
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

    def _op_watch(self, conn: _Conn, a: dict[str, Any]) -> Any:
        """Stream a session's output to this connection (host/stream.py). The
        reply goes out first: the stream's first screen follows it."""
        sid = a["session_id"]
        self.registry.info(sid)  # NO_SUCH_SESSION before anything starts
        old = conn.streams.pop(sid, None)
        if old is not None:
            old.stop()
        conn.start_sender()
        conn.send(P.ok_reply(conn.msg_id, True))
        stream = ViewerStream(sid, conn.wake)
        conn.streams[sid] = stream
        try:
            stream.start(self.registry)
        except errors.DshError as e:  # closed meanwhile: the viewer hears it as closed
            log.info("watching %s for pid %s failed: %s", sid, conn.peer_pid, e)
            conn.streams.pop(sid, None)
            conn.push({"type": "terminal", "session_id": sid, "status": "closed"})
        return _SENT

    def _op_detach(self, conn: _Conn, a: dict[str, Any]) -> Any:
        log.info("client pid %s detached; its terminals keep running", conn.peer_pid)
        return True

    def _op_shutdown(self, conn: _Conn, a: dict[str, Any]) -> Any:
        self.stop(f"stop requested by pid {conn.peer_pid}")
        return {"pid": os.getpid()}


def run(
    paths: HostPaths,
    *,
    watch_pid: int | None,
    ready_fd: int | None = None,
    lock_fd: int | None = None,
    reaper: bool = True,
    idle_timeout: float | None = None,
) -> int:
    """The host process's main: split off the orphan sweeper (see :mod:`.orphan_sweeper`),
    bind (under the start lock), tell the starter we are ready, serve, clean
    up. Exit status 0 on a normal stop, 3 when another host already serves
    this name."""
    from .lifecycle import probe
    from .orphan_sweeper import split

    if reaper:
        split(close_fds=(ready_fd, lock_fd))
    logging.basicConfig(level=logging.INFO, format="%(asctime)s dsh-magics host[%(process)d] %(message)s")
    if watch_pid is not None and not procs.alive(watch_pid):
        log.info("the process %s this host should follow is already gone", watch_pid)
        _tell(ready_fd, "gone")
        return 4
    lock: FileLock | None = None
    if lock_fd is None:
        lock = FileLock(paths.lock).acquire()
    try:
        if probe(paths) is not None:
            _tell(ready_fd, "running")
            log.info("another host already serves %s", paths.socket)
            return 3
        if os.path.lexists(paths.socket):
            log.info("replacing the stale socket %s", paths.socket)
            os.unlink(paths.socket)
        server = HostServer(paths, watch_pid=watch_pid, idle_timeout=idle_timeout)
        server.bind()
    finally:
        if lock is not None:
            lock.release()
        if lock_fd is not None:
            os.close(lock_fd)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: server.stop(f"signal {signum}"))
    log.info(
        "serving %s (instance %s, watching %s, stops after %s idle)", paths.socket, server.instance,
        watch_pid or "nothing", idle.describe(idle_timeout) if idle_timeout else "no time",
    )
    _tell(ready_fd, f"ready {os.getpid()} {server.instance}")
    reason = server.serve_forever()
    log.info("host exited: %s", reason)
    if server.expected_stop:
        # A normal end leaves nothing behind (socket and info went in serve_forever);
        # pinned by tests/host/test_litter.py::test_a_stopped_host_leaves_nothing.
        remove_lock(paths)
        remove_own_log(paths)
    return 0


def _tell(fd: int | None, text: str) -> None:
    if fd is None:
        return
    try:
        os.write(fd, (text + "\n").encode())
    except OSError:
        pass
    finally:
        try:
            os.close(fd)
        except OSError:
            pass
