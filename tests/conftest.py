"""Shared test helpers: deadlines instead of sleeps, process checks with ps."""

from __future__ import annotations

import errno
import os
import shlex
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from tests.containers import docker_name_for_podman, podman_box  # noqa: F401  (session fixtures)
from tests.processes import live_pids, pids_with_env, ps_lines  # noqa: F401  (imported from here by many tests)
from tests.sshd import sshd  # noqa: F401  (the session's one sshd: imported here only)

# Shells in tests start without the machine's login profile unless a test asks
# for one (the engine's own profile tests use a private HOME). A real profile
# makes every shell slower and, worse, can hang: pyenv's rehash in a profile
# waits up to 60 s on a lock file that a shell killed mid-start-up leaves
# behind. Kernels and subprocesses started by tests inherit this.
os.environ.setdefault("DSH_MAGICS_LOGIN", "0")
# Shells that do read a profile (tests of `exec bash -l`, `bash -i`) must not
# wait a minute on such a lock either.
os.environ.setdefault("PYENV_REHASH_TIMEOUT", "1")


def wait_until(
    pred: Callable[[], Any],
    timeout: float = 10.0,
    interval: float = 0.01,
    msg: str = "",
    retry: tuple[type[BaseException], ...] = (),
) -> Any:
    """Poll ``pred`` until it returns something truthy or the deadline passes
    (the one such helper of the suite). ``retry``: exceptions that mean "not
    yet" (a browser element still being drawn); the last one is reported."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while True:
        try:
            value = pred()
        except retry as exc:
            value, last = None, exc
        if value:
            return value
        if time.monotonic() >= deadline:
            detail = f" (last error: {last!r})" if last is not None else ""
            raise AssertionError(f"condition not met within {timeout}s {msg}{detail}".strip())
        time.sleep(interval)


def done(engine: Any, session: str, command: str, wait_ms: int = 20_000) -> Any:
    """``command``'s Result on ``session`` of ``engine`` (a Registry or a
    HostClient), which must settle within ``wait_ms``."""
    from dsh_magics.terminal import Result

    out = engine.exec(session, command, wait_ms=wait_ms)
    assert isinstance(out, Result), f"{command!r} did not settle within {wait_ms} ms"
    return out


class Calls(list[str]):
    """What :func:`calls_of` saw: the calling thread's name per call, in order;
    :meth:`of` those of one of the functions watched."""

    def __init__(self) -> None:
        super().__init__()
        self.by_code: dict[Any, list[str]] = {}

    def of(self, fn: Callable[..., Any]) -> list[str]:
        return self.by_code.get(fn.__code__, [])


@contextmanager
def calls_of(*fns: Callable[..., Any]) -> Iterator[Calls]:
    """The calls of ``fns`` while the block runs, by thread: a profiler hook on
    the real functions, nothing patched (every thread: those that start get
    ``sys.setprofile`` through ``threading``'s hook; the block's own thread is
    set here). How the suite counts that a request is checked once."""
    codes = {fn.__code__ for fn in fns}
    seen = Calls()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code in codes:
            name = threading.current_thread().name
            seen.append(name)
            seen.by_code.setdefault(frame.f_code, []).append(name)

    old = sys.getprofile()
    threading.setprofile(profile)
    sys.setprofile(profile)
    try:
        yield seen
    finally:
        sys.setprofile(old)
        threading.setprofile(None)  # type: ignore[arg-type]


class Gate:
    """A named pipe that a shell command blocks on until the test opens it:
    "the job is still running while X happens" without guessing a duration.

    ``shell`` is the command to put in the job (``cat`` of the pipe: an
    external program, in the job's foreground group, printing nothing);
    ``open()`` waits until that command has the pipe open (so the job has
    reached the gate), then lets it through. One ``open()`` per pass."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        os.mkfifo(self.path)

    @property
    def shell(self) -> str:
        return f"cat {shlex.quote(self.path)}"

    def _let_through(self) -> bool:
        """If a reader has the pipe open (the job is at the gate), come and
        go as a writer, so it reads EOF; else False."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno == errno.ENXIO:  # no reader yet
                return False
            raise
        os.close(fd)
        return True

    def open(self, timeout: float = 10.0) -> None:
        wait_until(self._let_through, timeout, msg=f"the job to reach the gate {self.path}")


@pytest.fixture
def gate(tmp_path: Path) -> Gate:
    return Gate(tmp_path / "gate")


@pytest.fixture
def unique_session(request) -> str:
    return f"t-{request.node.name[:40]}-{os.getpid()}"


# -- litter outside the checkout: pyenv's rehash lock -----------------------------
# A shell killed while its profile runs `pyenv rehash` can leave this lock
# behind, and every login shell on the machine then waits 60 s for it. The
# run fails if it ends with a lock that was not there when it began (another
# rehash on the machine may hold it for a moment: that one goes away).
PYENV_LOCK = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "shims" / ".pyenv-shim"
_lock_at_start: list[bool] = []


def pytest_sessionstart(session: pytest.Session) -> None:
    _lock_at_start.append(PYENV_LOCK.exists())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _lock_at_start or _lock_at_start[0] or hasattr(session.config, "workerinput"):
        return
    try:
        wait_until(lambda: not PYENV_LOCK.exists(), timeout=10, interval=0.1)
    except AssertionError:
        session.config.get_terminal_writer().line(
            f"FAIL: the test run left {PYENV_LOCK} behind (a shell was killed while pyenv's "
            "rehash held it); every login shell now waits for it",
            red=True,
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
