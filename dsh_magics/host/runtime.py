"""Where a host's files live: a private 0700 per-user directory, checked before use.

Its files and why it is refused when others could reach it: docs/host.md, docs/security.md.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import stat
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import HostUnavailable, InvalidArgument
from ..terminal.core import procs

ENV_DIR = "DSH_MAGICS_HOST_DIR"
DEFAULT_NAME = "default"

#: Logs of hosts that did not end normally, kept per runtime directory.
KEEP_CRASH_LOGS = 5

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
# sun_path is 108 bytes including the terminating NUL.
_MAX_SOCKET_PATH = 107


def validate_name(name: object) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise InvalidArgument(
            f"host name {name!r} must be 1-64 letters, digits, '.', '_' or '-' "
            "(starting with a letter or digit)"
        )
    return name


def default_dir(environ: Mapping[str, str] | None = None) -> str:
    """``$DSH_MAGICS_HOST_DIR``, else ``$XDG_RUNTIME_DIR/dsh-magics``, else
    ``/tmp/dsh-magics-<uid>``."""
    env = os.environ if environ is None else environ
    explicit = env.get(ENV_DIR, "").strip()
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    xdg = env.get("XDG_RUNTIME_DIR", "").strip()
    if xdg and os.path.isabs(xdg):
        try:
            st = os.stat(xdg)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid():
                return os.path.join(xdg, "dsh-magics")
        except OSError:
            pass  # no usable XDG_RUNTIME_DIR: fall back to the next candidate
    return f"/tmp/dsh-magics-{os.getuid()}"


def candidate_dirs(environ: Mapping[str, str] | None = None) -> list[str]:
    """Where hosts of this user may live: the explicit directory if one is
    set, else both the XDG runtime directory and the /tmp fallback (a
    server started without ``XDG_RUNTIME_DIR`` uses the latter, while the
    shell that runs ``dsh-magics host status`` may well have it set)."""
    env = os.environ if environ is None else environ
    if env.get(ENV_DIR, "").strip():
        return [default_dir(env)]
    out = [default_dir(env)]
    fallback = f"/tmp/dsh-magics-{os.getuid()}"
    if fallback not in out:
        out.append(fallback)
    return out


#: What a private file of ours must be, by kind: the test of its type and the mode it must have.
_PRIVATE = {"directory": (stat.S_ISDIR, 0o700), "regular file": (stat.S_ISREG, 0o600)}


def not_private(st: os.stat_result, kind: str) -> str | None:
    """Why the file ``st`` describes (from ``lstat``/``fstat``) is not a ``kind``
    (``directory`` 0700, ``regular file`` 0600) only this user can reach, as a phrase
    ("is a symbolic link"), or None: the one check of the host's directory and the
    MCP server's task key."""
    is_kind, mode = _PRIVATE[kind]
    if stat.S_ISLNK(st.st_mode):
        return "is a symbolic link"
    if not is_kind(st.st_mode):
        return f"is not a {kind}"
    if st.st_uid != os.getuid():
        return f"belongs to uid {st.st_uid}, not to uid {os.getuid()}"
    if st.st_mode & 0o077:
        return f"has mode {stat.S_IMODE(st.st_mode):04o}; it must be {mode:04o}"
    return None


def secure_dir(path: str) -> str:
    """Create ``path`` (mode 0700) or check an existing one is private to us."""
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass  # checked below
    except OSError as e:
        raise HostUnavailable(f"cannot create the host runtime directory {path}: {e.strerror}") from None
    problem = not_private(os.lstat(path), "directory")
    if problem:
        raise HostUnavailable(
            f"refusing the host runtime directory {path}: it {problem}", path=path
        )
    return path


@dataclass(frozen=True)
class HostPaths:
    """The files of one named host."""

    dir: str
    name: str

    @classmethod
    def for_name(cls, name: str = DEFAULT_NAME, directory: str | None = None) -> HostPaths:
        validate_name(name)
        paths = cls(secure_dir(directory or default_dir()), name)
        if len(paths.socket.encode()) > _MAX_SOCKET_PATH:
            raise HostUnavailable(
                f"the socket path {paths.socket} is longer than a Unix socket allows; "
                f"set {ENV_DIR} to a shorter directory"
            )
        return paths

    @property
    def socket(self) -> str:
        return os.path.join(self.dir, f"{self.name}.sock")

    @property
    def lock(self) -> str:
        return os.path.join(self.dir, f"{self.name}.lock")

    @property
    def info(self) -> str:
        return os.path.join(self.dir, f"{self.name}.json")

    @property
    def log(self) -> str:
        return os.path.join(self.dir, f"{self.name}.log")

    def read_info(self) -> dict[str, Any] | None:
        try:
            with open(self.info, encoding="utf-8") as f:
                data = json.load(f)
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def write_info(self, info: dict[str, Any]) -> None:
        tmp = f"{self.info}.{os.getpid()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(info, f)
            os.replace(tmp, self.info)
        except OSError:
            with contextlib.suppress(OSError):  # a full disk left half a file
                os.unlink(tmp)
            raise

    def log_tail(self, max_bytes: int = 2000) -> str:
        try:
            with open(self.log, "rb") as f:
                f.seek(0, os.SEEK_END)
                size = f.tell()
                f.seek(max(0, size - max_bytes))
                return f.read().decode("utf-8", "replace").strip()
        except OSError:
            return ""


def retire_log(paths: HostPaths) -> None:
    """Before a new host of this name starts: a log left at ``<name>.log``
    is a previous host's that did not end normally; keep it under a dated
    name (``<name>.<UTC time>.log``) so the new host's log starts empty."""
    try:
        mtime = os.stat(paths.log).st_mtime
    except OSError:
        return
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(mtime))
    target = os.path.join(paths.dir, f"{paths.name}.{stamp}.log")
    n = 1
    while os.path.exists(target):
        n += 1
        target = os.path.join(paths.dir, f"{paths.name}.{stamp}-{n}.log")
    try:
        os.replace(paths.log, target)
    except OSError:
        pass  # no log to keep (or it moved meanwhile)


def prune_logs(directory: str, keep: int = KEEP_CRASH_LOGS) -> list[str]:
    """Remove all but the newest ``keep`` logs of hosts that are gone
    (a running host's own ``<name>.log`` is never touched). Returns what it
    removed."""
    try:
        entries = os.listdir(directory)
    except OSError:
        return []
    live = set()
    for name in list_names(directory):
        info = HostPaths(directory, name).read_info()
        pid = info.get("pid") if info else None
        if isinstance(pid, int) and procs.alive(pid):
            live.add(f"{name}.log")
    old: list[tuple[float, str]] = []
    for entry in entries:
        if entry in live or not (entry.endswith(".log") or entry.endswith(".log.1")):
            continue
        path = os.path.join(directory, entry)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            old.append((st.st_mtime, path))
    old.sort(reverse=True)
    removed = []
    for _, path in old[keep:]:
        try:
            os.unlink(path)
            removed.append(path)
        except OSError:
            pass  # removed by another host meanwhile
    return removed


def remove_own_log(paths: HostPaths, fd: int = 2) -> bool:
    """At a host's normal end: remove ``<name>.log`` if it is the file our
    ``fd`` writes to (a host run in a terminal, or one whose log was
    already retired by a newer host, leaves the name alone)."""
    try:
        mine = os.fstat(fd)
        there = os.stat(paths.log)
    except OSError:
        return False
    if (mine.st_dev, mine.st_ino) != (there.st_dev, there.st_ino):
        return False
    try:
        os.unlink(paths.log)
    except OSError:
        return False
    return True


def remove_lock(paths: HostPaths, timeout: float = 2.0) -> bool:
    """At a host's normal end: remove ``<name>.lock``, holding it while we
    do so. A starter that opened the old file before it went finds, once it
    gets the lock, that the path no longer names that file, and takes a
    fresh one (:meth:`FileLock.acquire`). If someone is starting a host
    right now, the lock stays (the next host removes it when it ends)."""
    lock = FileLock(paths.lock, timeout=timeout, create=False)
    try:
        lock.acquire()
    except (HostUnavailable, OSError):
        return False
    try:
        os.unlink(paths.lock)
        return True
    except OSError:
        return False
    finally:
        lock.release()


def list_names(directory: str | None = None) -> list[str]:
    """Names of the hosts that left files in the runtime directory."""
    d = directory or default_dir()
    try:
        entries = os.listdir(d)
    except OSError:
        return []
    names = set()
    for entry in entries:
        base, ext = os.path.splitext(entry)
        if ext in (".sock", ".json") and _NAME.match(base):
            names.add(base)
    return sorted(names)


class FileLock:
    """An exclusive ``flock`` on ``<name>.lock``: only one process at a time
    decides whether a host must be started, so two kernels starting at the
    same moment end up with one host.

    The lock belongs to the open file description, so a spawned host that
    inherits :attr:`fd` keeps holding it until it is ready to serve, even if
    the process that spawned it dies in between.
    """

    def __init__(self, path: str, timeout: float = 30.0, *, create: bool = True) -> None:
        self.path = path
        self.timeout = timeout
        self.create = create
        self.fd: int | None = None

    def acquire(self) -> FileLock:
        deadline = time.monotonic() + self.timeout
        flags = os.O_RDWR | os.O_CLOEXEC | (os.O_CREAT if self.create else 0)
        while True:
            fd = os.open(self.path, flags, 0o600)
            self._lock(fd, deadline)
            # A host that ended removed the file while we waited for it: our
            # lock is on a file nobody else will open. Take the new one (pinned by
            # tests/host/test_litter.py::test_a_starter_waiting_on_a_removed_lock_takes_the_new_one).
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(self.path))
            except FileNotFoundError:
                same = False
            if same:
                self.fd = fd
                return self
            os.close(fd)
            if not self.create:
                raise FileNotFoundError(self.path)

    def _lock(self, fd: int, deadline: float) -> None:
        delay = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except OSError as e:
                if e.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
            if time.monotonic() >= deadline:
                os.close(fd)
                raise HostUnavailable(
                    f"another process has been starting the terminal host for over {self.timeout:g}s "
                    f"(lock {self.path})"
                )
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def release(self) -> None:
        if self.fd is not None:
            try:
                os.close(self.fd)  # closing the last copy drops the flock
            finally:
                self.fd = None

    def __enter__(self) -> FileLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()
