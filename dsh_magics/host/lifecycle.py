"""Finding, starting and stopping a host, and deciding whether to use one.

Starting holds ``<name>.lock`` until the new host listens, so two kernels get one host.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import DshError, HostUnavailable, InvalidArgument
from ..terminal.core import fdwait, procs
from ..terminal.core.boot import boot_argv
from . import protocol as P
from .runtime import (
    DEFAULT_NAME,
    FileLock,
    HostPaths,
    candidate_dirs,
    list_names,
    prune_logs,
    remove_lock,
    retire_log,
    validate_name,
)

ENV_MODE = "DSH_MAGICS_HOST"
#: Join the host of this name (e.g. ``mcp``, where ``dsh-magics mcp`` keeps an
#: agent's terminals) instead of choosing one; ``DSH_MAGICS_HOST=0`` still wins.
ENV_NAME = "DSH_MAGICS_HOST_NAME"

_ON = ("1", "true", "yes", "on")
_OFF = ("0", "false", "no", "off")


# ---------------------------------------------------------------------------
# probing


def probe(paths: HostPaths, timeout: float = 5.0) -> dict[str, Any] | None:
    """The host's hello if one answers on ``paths.socket``; None if nobody
    listens there (no socket file, or a stale one: connection refused)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(paths.socket)
        except (FileNotFoundError, ConnectionRefusedError):
            return None
        except OSError as e:
            raise HostUnavailable(f"cannot connect to the terminal host at {paths.socket}: {e.strerror}") from None
        try:
            try:
                sock.sendall(P.request(0, "hello", {"client": {"pid": os.getpid(), "purpose": "probe"}}))
            except (BrokenPipeError, ConnectionResetError):
                pass  # refused and closed at once: its reason is still there to read
            line = P.LineReader(sock, P.MAX_REPLY).next_item()
        except TimeoutError:
            raise HostUnavailable(
                f"the terminal host at {paths.socket} accepts connections but does not answer "
                f"within {timeout:g}s"
            ) from None
        except OSError:
            return None  # it died while we asked: as good as stale
        if not isinstance(line, bytes):
            return None
        try:
            msg = json.loads(line)
            ok, value, error = msg.get("ok"), msg.get("value"), msg.get("error")
        except (ValueError, AttributeError):
            raise HostUnavailable(f"something that is not a terminal host listens at {paths.socket}") from None
        if not ok:
            raise P.error_from_wire(error)
        return value
    finally:
        sock.close()


# ---------------------------------------------------------------------------
# starting


def ensure_host(
    paths: HostPaths, *, watch_pid: int | None = None, timeout: float = 30.0, idle_timeout: str | None = None
) -> dict[str, Any]:
    """Join the host serving ``paths`` or start it; returns its hello."""
    info = probe(paths)
    if info is not None:
        return info
    lock = FileLock(paths.lock, timeout=timeout)
    try:
        lock.acquire()
    except OSError as e:  # no room even for the lock file
        raise _cannot_start(paths, e.strerror or str(e)) from None
    try:
        info = probe(paths)
        if info is not None:
            return info
        if os.path.lexists(paths.socket):
            os.unlink(paths.socket)  # stale: its host is gone (connection refused)
        assert lock.fd is not None
        return _spawn(paths, watch_pid, lock.fd, timeout, idle_timeout)
    finally:
        lock.release()


def _spawn(
    paths: HostPaths, watch_pid: int | None, lock_fd: int, timeout: float, idle_timeout: str | None = None
) -> dict[str, Any]:
    retire_log(paths)
    prune_logs(paths.dir)
    try:
        log_fd = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    except OSError as e:
        raise _cannot_start(paths, e.strerror or str(e)) from None
    r, w = os.pipe()
    # Not ``-m``: its cwd is the user's home, where a ``json.py`` of theirs
    # shadowed the standard library (terminal/core/boot.py).
    cmd = boot_argv(
        "dsh_magics.host", "serve",
        "--name", paths.name, "--dir", paths.dir,
        "--ready-fd", str(w), "--lock-fd", str(lock_fd),
    )  # fmt: skip
    if watch_pid is not None:
        cmd += ["--watch-pid", str(watch_pid)]
    if idle_timeout is not None:  # else the host reads DSH_MAGICS_HOST_IDLE (host/idle.py)
        cmd += ["--idle-timeout", str(idle_timeout)]
    try:
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            pass_fds=(w, lock_fd),
            # Its own session: a kernel interrupt (SIGINT to the kernel's
            # process group) or a kill of that group must not reach the host.
            start_new_session=True,
            env=host_env(),
            cwd=_home(),
        )
    except OSError as e:
        os.close(r)
        raise HostUnavailable(f"cannot start the terminal host: {e}") from None
    finally:
        os.close(w)
        os.close(log_fd)
    # Reap it whenever it ends, so a host that dies under a live kernel does
    # not linger as a zombie.
    threading.Thread(target=proc.wait, name="dsh-host-reaper", daemon=True).start()
    try:
        answer = _read_ready(r, timeout)
    finally:
        os.close(r)
    if answer.startswith("ready") or answer.startswith("running"):
        info = probe(paths)
        if info is not None:
            return info
    if answer.startswith("failed "):
        # Nothing of it is left but its empty log and the lock we hold:
        # a start that failed for want of space leaves no litter either.
        for path in (paths.log, paths.lock):
            with contextlib.suppress(OSError):
                if path == paths.lock or os.path.getsize(path) == 0:
                    os.unlink(path)
        raise _cannot_start(paths, answer[len("failed ") :])
    tail = paths.log_tail()
    raise HostUnavailable(
        "the terminal host did not start" + (f"; its log ends with:\n{tail}" if tail else ""),
        log=paths.log,
    )


def _cannot_start(paths: HostPaths, why: str) -> HostUnavailable:
    """The host could not write its files (a full disk, mostly): the cause and the directory."""
    return HostUnavailable(
        f"the terminal host could not start: {why} in its directory {paths.dir}", path=paths.dir, reason=why
    )


def _home() -> str:
    home = os.path.expanduser("~")
    return home if os.path.isdir(home) else "/"


def _read_ready(fd: int, timeout: float) -> str:
    deadline = time.monotonic() + timeout
    data = b""
    while b"\n" not in data:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return ""
        ready = fdwait.readable([fd], remaining)
        if not ready:
            continue
        chunk = os.read(fd, 256)
        if not chunk:
            break
        data += chunk
    return data.decode("ascii", "replace").strip()


def host_env() -> dict[str, str]:
    """The host's environment: the starting kernel's, without what belongs
    to that one kernel. Terminals inherit it, as they inherit a kernel's
    environment in-process: the user's PYTHONPATH as it is (the host finds
    this package without it: terminal/core/boot.py)."""
    env = dict(os.environ)
    for key in list(env):
        if key.startswith("JPY_") or key in (procs.TOKEN_VAR, "DSH_MAGICS_SESSION"):
            del env[key]
    if env.get("MPLBACKEND", "").startswith("module://"):
        del env["MPLBACKEND"]
    return env


# ---------------------------------------------------------------------------
# stopping and status


def stop_host(paths: HostPaths, timeout: float = 30.0) -> dict[str, Any] | None:
    """Stop the host serving ``paths`` (it closes every terminal first).

    Returns its hello, or None when no host was running (stale files are
    removed)."""
    info = probe(paths)
    if info is None:
        _remove_stale(paths)
        return None
    pid = int(info["pid"])
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        sock.connect(paths.socket)
        sock.sendall(P.request(1, "shutdown", {}))
        P.LineReader(sock, P.MAX_REPLY).next_item()
    except OSError:
        pass  # it went away before answering: that is a stop too
    finally:
        sock.close()
    if not procs.exited_within(pid, timeout):
        raise HostUnavailable(f"the terminal host (pid {pid}) did not stop within {timeout:g}s", pid=pid)
    return info


def _remove_stale(paths: HostPaths) -> None:
    info = paths.read_info()
    if info is not None and procs.alive(int(info.get("pid") or 0)) and probe(paths) is not None:
        return
    for path in (paths.socket, paths.info):
        try:
            os.unlink(path)
        except OSError:
            pass  # already gone
    remove_lock(paths)


@dataclass
class HostStatus:
    name: str
    running: bool
    info: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "running": self.running, **self.info}


def host_status(directory: str | None = None, name: str | None = None) -> list[HostStatus]:
    """Every host that left files in the runtime directory (by default every
    candidate directory), or just the one called ``name``."""
    out = []
    for d in [directory] if directory else candidate_dirs():
        for n in list_names(d):
            if name is not None and n != name:
                continue
            paths = HostPaths.for_name(n, d)
            try:
                hello = probe(paths)
            except DshError as e:
                out.append(HostStatus(n, False, {"error": e.to_dict(), "dir": d}))
                continue
            if hello is None:
                out.append(HostStatus(n, False, {"stale": True, "socket": paths.socket, "dir": d}))
                continue
            out.append(HostStatus(n, True, {**(_status(paths) or hello), "dir": d}))
    return out


def _status(paths: HostPaths) -> dict[str, Any] | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(5.0)
    try:
        sock.connect(paths.socket)
        sock.sendall(P.request(1, "status", {}))
        line = P.LineReader(sock, P.MAX_REPLY).next_item()
        if isinstance(line, bytes):
            msg = json.loads(line)
            if msg.get("ok"):
                return msg["value"]
    except OSError:
        return None
    finally:
        sock.close()
    return None


# ---------------------------------------------------------------------------
# choosing the mode


@dataclass(frozen=True)
class ModeChoice:
    """Where this kernel's terminals live, and why (shown to users)."""

    use_host: bool
    forced: bool
    name: str
    watch_pid: int | None
    reason: str


def parse_mode(value: object, source: str) -> str:
    """``on`` / ``off`` / ``auto`` from a config value or ``DSH_MAGICS_HOST``."""
    if value is None:
        return "auto"
    if isinstance(value, bool):
        return "on" if value else "off"
    text = str(value).strip().lower()
    if text in ("", "auto"):
        return "auto"
    if text in _ON:
        return "on"
    if text in _OFF:
        return "off"
    raise InvalidArgument(f"{source} must be 0, 1 or auto, got {value!r}")


def jupyter_server_pid(environ: Mapping[str, str] | None = None, *, require_notebook: bool = True) -> int | None:
    """The pid of the Jupyter server that started this kernel, if any.

    jupyter_client sets ``JPY_PARENT_PID`` for every kernel it launches (also
    for test harnesses and ``nbclient``); only a Jupyter server's session
    manager adds ``JPY_SESSION_NAME`` (the notebook path). The pair marks a
    notebook kernel under a server, which is when terminals should outlive
    the kernel.
    """
    env = os.environ if environ is None else environ
    if require_notebook and not env.get("JPY_SESSION_NAME", "").strip():
        return None
    raw = env.get("JPY_PARENT_PID", "").strip()
    if not raw.isdigit():
        return None
    pid = int(raw)
    if pid <= 1 or pid == os.getpid() or not procs.alive(pid):
        return None
    return pid


def choose_mode(configured: object = None, environ: Mapping[str, str] | None = None) -> ModeChoice:
    """``DSH_MAGICS_HOST`` (if set) wins over the config key, which wins over
    the automatic choice: the host under a Jupyter server, in-process
    otherwise. ``DSH_MAGICS_HOST_NAME`` names the host to join (unless the
    mode is forced off)."""
    env = os.environ if environ is None else environ
    env_mode = parse_mode(env.get(ENV_MODE), ENV_MODE)
    cfg_mode = parse_mode(configured, "the host config key")
    mode, source = (env_mode, ENV_MODE) if env_mode != "auto" else (cfg_mode, "configuration")
    if mode == "off":
        return ModeChoice(False, True, DEFAULT_NAME, None, f"in-process (forced by {source})")
    named = env.get(ENV_NAME, "").strip()
    if named:
        return ModeChoice(True, True, validate_name(named), None, f"the host {named!r} (chosen by {ENV_NAME})")
    if mode == "on":
        pid = jupyter_server_pid(env, require_notebook=False)
        if pid is not None:
            return ModeChoice(True, True, f"jupyter-{pid}", pid, f"host of the Jupyter server pid {pid} (forced by {source})")
        return ModeChoice(True, True, DEFAULT_NAME, None, f"the default host (forced by {source}; no Jupyter server seen)")
    pid = jupyter_server_pid(env)
    if pid is not None:
        return ModeChoice(True, False, f"jupyter-{pid}", pid, f"host of the Jupyter server pid {pid}")
    return ModeChoice(False, False, DEFAULT_NAME, None, "in-process (no Jupyter server seen)")
