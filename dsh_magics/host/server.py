""":class:`HostServer`: one process that owns a :class:`Registry` and serves it over a Unix socket.

Thread per connection; nothing a peer sends can crash it (docs/host.md, "Internals").
The server accepts and ends connections and runs the host's life (start, idle
policy, stop); requests are answered by :mod:`.requests`, each connection's
events written by :mod:`.connection`, viewers' live streams come from :mod:`.stream`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import signal
import socket
import struct
import threading
import time
from collections.abc import Callable
from typing import Any

from .. import errors
from ..terminal import Registry
from ..terminal.core import fdwait, procs
from . import idle
from . import protocol as P
from .connection import EVENT_TYPES, Connection
from .interest import Interest
from .pages import PageTable
from .requests import Requests
from .runtime import FileLock, HostPaths, remove_lock, remove_own_log

log = logging.getLogger("dsh_magics.host")

#: Longest a single blocking request may hold its connection; clients loop.
MAX_BLOCK_SECONDS = P.MAX_BLOCK_SECONDS

_PEERCRED = struct.Struct("3i")

#: How often an idle host checks that its socket file is still its own
#: (seconds; ``DSH_MAGICS_HOST_SOCKET_CHECK`` overrides it, for tests).
SOCKET_CHECK = float(os.environ.get("DSH_MAGICS_HOST_SOCKET_CHECK") or 30.0)


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
        registry: Registry | None = None,
        max_request: int = P.MAX_REQUEST,
        idle_timeout: float | None = None,
    ) -> None:
        self.paths = paths
        self.watch_pid = watch_pid
        self.registry: Registry = registry if registry is not None else Registry()
        self.max_request = max_request
        self.instance = secrets.token_hex(8)
        self.started_at = time.time()
        self._listener: socket.socket | None = None
        self._socket_ino = 0
        self._conns: set[Connection] = set()
        self._conns_lock = threading.Lock()
        self._stop_r, self._stop_w = os.pipe()
        self._stopping = threading.Event()
        self.stop_reason = ""
        self.expected_stop = True
        self._unsubscribe: Callable[[], None] | None = None
        self.pages = PageTable(self.registry, procs.alive)
        self.interest = Interest(self._owner_of)
        self.idle = idle.IdleClock(idle_timeout)
        self.requests = Requests(self)

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
            pass  # the pipe is full or closed: a stop is already pending

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
                pass  # already closed

    def _remove_files(self) -> None:
        # Only our own files: a newer host may already have replaced them.
        info = self.paths.read_info()
        if info is not None and info.get("instance") != self.instance:
            return
        for path in (self.paths.socket, self.paths.info):
            try:
                os.unlink(path)
            except OSError:
                pass  # already gone

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
                pass  # the refused peer went away: nothing to tell it
            sock.close()
            return
        conn = Connection(sock, peer, self.interest)
        self.idle.touch()
        with self._conns_lock:
            self._conns.add(conn)
        threading.Thread(target=self._serve_conn, args=(conn,), name=f"dsh-host-conn-{peer[0]}", daemon=True).start()

    def _serve_conn(self, conn: Connection) -> None:
        reader = P.LineReader(conn.sock, self.max_request)
        try:
            while True:
                if conn.streams and not reader.has_line():
                    # A viewer's stream goes out on this socket, and the client's every
                    # receive of it would wake a thread blocked in recv here (a socket has
                    # one wait queue); select waits for input only (README, bench_attach).
                    # (A person's keyboard handed over is read by a thread of its own: host/tty_in.py.)
                    try:
                        if not fdwait.readable([conn.sock.fileno()], None):
                            continue
                    except (OSError, ValueError):
                        break  # its socket was closed under it (fileno -1): it ends
                item = reader.next_item()  # (no generator frame per request: a key's way)
                if item is None or self._stopping.is_set():
                    break
                reply = self.requests.handle(conn, item)
                if reply is not None:
                    conn.send(reply)
        except OSError:
            pass  # the peer went away: the finally below ends the connection
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

    @property
    def stopping(self) -> bool:
        return self._stopping.is_set()

    def connections(self) -> list[Connection]:
        with self._conns_lock:
            return list(self._conns)

    # ------------------------------------------------------------------
    # events
    def _fan_out(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        if kind not in EVENT_TYPES:
            # ``input`` (each key a person types): no connection takes it, and it
            # comes on a key's way to its echo (benchmarks/README.md, bench_attach.py).
            return
        self.idle.touch()
        with self._conns_lock:
            subs = [c for c in self._conns if c.subscribed and not c.closed]
        if kind == "terminal" and event.get("status") == "closed":
            # Handed terminals are given back before a viewer hears of it (host/tty_out.py).
            for c in subs:
                stream = c.streams.get(str(event.get("session_id")))
                if stream is not None:
                    stream.release()
        for c in subs:
            if kind in c.types:  # (push looks too; an attach client takes no echo's ``output``)
                c.push(event)
        if kind == "terminal" and event.get("status") == "idle":
            # A new terminal for the session id (emitted outside the engine's locks):
            # viewers follow it (host/stream.py).
            for c in subs:
                stream = c.streams.get(str(event.get("session_id")))
                if stream is not None:
                    try:
                        stream.restart(self.registry)
                    except errors.DshError as e:
                        log.info("a viewer of %s could not follow its new terminal: %s", event.get("session_id"), e)

    # ------------------------------------------------------------------
    # whose job is it (for host/interest.py)
    def _owner_of(self, job_id: str) -> str | None:
        try:
            return self.registry.job(job_id).owner
        except errors.DshError:
            return None


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
        try:
            server.bind()
        except OSError as e:  # a full disk (the host directory's): say so to the starter, leave nothing
            with contextlib.suppress(OSError):
                os.unlink(paths.socket)
            log.error("cannot serve %s: %s", paths.socket, e)
            _tell(ready_fd, f"failed {e.strerror or e}")
            return 5
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
        pass  # the starter is gone: nobody waits for the word
    finally:
        try:
            os.close(fd)
        except OSError:
            pass  # already closed
