"""When output the reader thread read went to an attached viewer
(``reader.handed_to_viewer``, said by host/stream.py), the screen's idle parse
waits for a moment of quiet (``reader.IDLE_S``): the viewer woken by that
output draws first (benchmarks/README.md, ``bench_attach.py``). The real loop,
on a real pipe standing in for the PTY."""

from __future__ import annotations

import os
import threading
import time

from dsh_magics.terminal.core import reader

from ..conftest import wait_until


class _Pipe:
    """What the loop reads: a pipe's read end (``fd``), alive until closed."""

    def __init__(self) -> None:
        self.fd, self.w = os.pipe()

    def isalive(self) -> bool:
        return True


def _run(on_data, on_idle=lambda: None):
    """The loop on its own thread; returns (pipe, stop)."""
    proc = _Pipe()
    wake = reader.WakePipe()
    done = threading.Event()
    handlers = reader.Handlers(
        closed=done.is_set,
        next_due=lambda: None,
        on_data=on_data,
        on_due=lambda: None,
        on_gone=lambda: None,
        on_idle=on_idle,
    )
    thread = threading.Thread(target=reader.loop, args=(proc, None, wake, handlers), daemon=True)
    thread.start()

    def stop() -> None:
        done.set()
        wake.poke()
        thread.join(10)
        assert not thread.is_alive()
        wake.close()
        os.close(proc.fd)
        os.close(proc.w)

    return proc, stop


def test_off_a_reader_thread_handing_to_a_viewer_changes_nothing():
    reader.handed_to_viewer()
    assert getattr(reader._local, "viewer", None) is None


def test_the_idle_parse_waits_for_quiet_after_a_viewer_was_written_to():
    times: dict[str, float] = {}

    def on_data(data: bytes) -> None:
        if data == b"v":  # a piece for a viewer
            times["sent"] = time.monotonic()
            reader.handed_to_viewer()

    def on_idle() -> None:
        times.setdefault("idle", time.monotonic())

    proc, stop = _run(on_data, on_idle)
    try:
        os.write(proc.w, b"v")
        wait_until(lambda: "idle" in times, msg="the idle parse")
        assert times["idle"] - times["sent"] >= reader.IDLE_S, times
    finally:
        stop()


def test_without_a_viewer_the_idle_parse_comes_when_nothing_more_is_read():
    idle = threading.Event()
    proc, stop = _run(lambda data: None, idle.set)
    try:
        os.write(proc.w, b"x")
        wait_until(idle.is_set, msg="the idle parse")
    finally:
        stop()
