"""``core.ctrl_c``: a real SIGINT to this process, held back and delivered
to the handler that was there before (Python's, a script's own, the
default action), and let through at once in an ``allowed`` stretch."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator

import pytest

from dsh_magics.terminal.core import ctrl_c


def _ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)


@pytest.fixture
def handler() -> Iterator[None]:
    """Each test installs its own SIGINT handler (the suite may run with
    SIGINT ignored); the one before comes back afterwards."""
    before = signal.getsignal(signal.SIGINT)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


def test_python_s_ctrl_c_comes_at_the_end_once(handler) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    done = []
    with pytest.raises(KeyboardInterrupt):
        with ctrl_c.deferred():
            _ctrl_c()
            _ctrl_c()
            done.append("rest")
    assert done == ["rest"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


def test_a_scripts_own_handler_gets_it_at_the_end_once(handler) -> None:
    calls: list[int] = []
    own = lambda signum, frame: calls.append(signum)  # noqa: E731
    signal.signal(signal.SIGINT, own)
    with ctrl_c.deferred():
        _ctrl_c()
        _ctrl_c()
        assert calls == []
    assert calls == [signal.SIGINT]
    assert signal.getsignal(signal.SIGINT) is own


def test_nothing_is_held_when_ctrl_c_is_ignored(handler) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with ctrl_c.deferred():
        _ctrl_c()
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN


def test_allowed_lets_it_through_at_once_and_delivers_one_held_back(handler) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    steps = []
    with ctrl_c.deferred():
        with ctrl_c.deferred():  # nested: both hold it back
            with pytest.raises(KeyboardInterrupt):
                with ctrl_c.allowed():
                    _ctrl_c()
                    steps.append("not reached")
            steps.append("held again")
            _ctrl_c()
            with pytest.raises(KeyboardInterrupt):
                with ctrl_c.allowed():  # the one held back, on entry
                    steps.append("not reached either")
        steps.append("nothing left to deliver")
    assert steps == ["held again", "nothing left to deliver"]


def test_other_threads_are_left_alone(handler) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)
    seen = []

    def run() -> None:
        with ctrl_c.deferred(), ctrl_c.allowed():
            seen.append(signal.getsignal(signal.SIGINT))

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert seen == [signal.default_int_handler]


def test_the_default_action_still_ends_the_process() -> None:
    """With SIGINT's default action (no Python handler), the held-back
    Ctrl-C ends the process at the end of the region, as it would have."""
    code = textwrap.dedent(
        """
        import os, signal
        from dsh_magics.terminal.core import ctrl_c
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        with ctrl_c.deferred():
            os.kill(os.getpid(), signal.SIGINT)
            print("finished the region", flush=True)
        print("not reached", flush=True)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == -signal.SIGINT, out
    assert out.stdout == "finished the region\n", out
