"""The live stream an attached viewer draws from (host/stream.py): the terminal's
bytes as they come, a screen in their place where bytes alone would draw wrong.

Checked two ways: in tmux as the real terminal (the viewer's rows are the
engine's screen, through output, colours, a full-screen program and a resize),
and on the wire, by replaying a stream into an emulator of our own."""

from __future__ import annotations

import base64
import os
import threading
from typing import Any

import pytest

from dsh_magics import jobs
from dsh_magics.attach import render
from dsh_magics.attach.link import Events
from dsh_magics.host import HostClient, HostPaths, stream
from dsh_magics.terminal.screen import Screen

from ..conftest import wait_until
from .conftest import T, Tmux, attach_command


def _same_rows(engine: HostClient, session: str, t: Tmux) -> None:
    def same() -> bool:
        want = [r.rstrip() for r in engine.screen(session)["lines"]]
        got = t.rows()[: len(want)]
        return got == want + [""] * (len(got) - len(want)) or got == want

    wait_until(same, T, msg=f"viewer:\n{t.screen()}\nengine:\n" + "\n".join(engine.screen(session)["lines"]))


def test_a_live_viewer_shows_exactly_the_terminals_screen(engine: HostClient, attach_dir: str, tmuxes: list[Tmux]) -> None:
    engine.attach("s-live")
    t = Tmux(attach_command("s-live", attach_dir), 100, 30)
    tmuxes.append(t)
    wait_until(lambda: (engine.screen("s-live")["cols"], engine.screen("s-live")["rows"]) == (100, 30), T)
    # Scrolling past the bottom, colours, a carriage return over a line, a cleared line end.
    engine.exec("s-live", "seq 1 70; printf '\\033[1;31mred\\033[0m plain\\rX\\n'; printf 'abcdef\\033[3D\\033[K\\n'",
                wait_ms=20_000)  # fmt: skip
    t.wait_for("Xed plain")
    _same_rows(engine, "s-live", t)
    assert "abc" in t.rows() and "70" in t.rows()
    # A full-screen program: drawn on entering, edited, and the normal screen back on leaving.
    job = engine.exec("s-live", "vim -u NONE -N", tty=True, source="notebook")
    assert isinstance(job, jobs.Job)
    t.wait_for("VIM - Vi IMproved")
    t.text("ione\rtwo\rthree")
    t.keys("Escape")
    t.wait_for("three")
    _same_rows(engine, "s-live", t)
    t.text(":q!")
    t.keys("Enter")
    assert job.wait(T)
    t.wait_for("Xed plain")
    _same_rows(engine, "s-live", t)
    # A resize: the host sends the reflowed screen, and bytes go on from it.
    t.resize(64, 18)
    wait_until(lambda: (engine.screen("s-live")["cols"], engine.screen("s-live")["rows"]) == (64, 18), T)
    engine.exec("s-live", "printf 'after-%s\\n' 1 2 3", wait_ms=20_000)
    t.wait_for("after-3")
    _same_rows(engine, "s-live", t)


def _replay(events: list[dict[str, Any]]) -> Screen:
    """What a live viewer's terminal shows after ``events``: the last screen
    painted as the client paints it, then the bytes that follow it."""
    last = max(i for i, e in enumerate(events) if e["type"] == "screen")
    shot = events[last]["screen"]
    screen = Screen(int(shot["cols"]), int(shot["rows"]))
    screen.feed(render.Painter().frame(shot, int(shot["cols"]), int(shot["rows"])).encode())
    for e in events[last + 1 :]:
        if e["type"] == "bytes":  # (a "terminal" event says the shell's state)
            screen.feed(base64.b64decode(e["data"]))
    return screen


def _next_of(ev: Events, session: str) -> dict[str, Any] | None:
    """The connection's next event of ``session``: it takes the ``terminal``
    events of every session of the module's host, and a late one of an
    earlier test's session may come first (the class of tests/attach/test_handover.py's
    refused hand-over failure in stop 44's ci)."""
    while (e := ev.next()) is not None and e.get("session_id") != session:
        pass
    return e


class _Collector:
    """Reads a watch connection's events on a thread of its own."""

    def __init__(self, ev: Events) -> None:
        self.events: list[dict[str, Any]] = []
        self._thread = threading.Thread(target=self._run, args=(ev,), daemon=True)
        self._thread.start()

    def _run(self, ev: Events) -> None:
        while (e := ev.next()) is not None:
            self.events.append(e)

    def join(self) -> None:
        self._thread.join(T)
        assert not self._thread.is_alive()


def _replays_to_the_screen(engine: HostClient, session: str, c: _Collector) -> None:
    def replayed() -> list[str]:
        got = list(c.events)
        return [r.rstrip() for r in _replay(got).text()] if any(e["type"] == "screen" for e in got) else []

    def same() -> bool:
        return replayed() == [r.rstrip() for r in engine.screen(session)["lines"]]

    wait_until(same, T, msg=f"replayed:\n{replayed()}\nengine:\n{engine.screen(session)['lines']}")


def test_a_viewer_that_falls_behind_gets_one_screen_and_the_bytes_after_it(
    engine: HostClient, attach_dir: str
) -> None:
    engine.attach("s-slow")
    engine.resize("s-slow", 80, 24)
    paths = HostPaths.for_name("att", attach_dir)
    client = {"pid": os.getpid(), "purpose": "attach", "session": "s-slow", "read_only": True}
    ev = Events(paths, client, ["terminal"])
    try:
        ev.watch("s-slow")
        first = _next_of(ev, "s-slow")
        assert first is not None and first["type"] == "screen"
        # More than MAX_BEHIND bytes while this viewer reads nothing.
        size = stream.MAX_BEHIND * 2
        res = engine.exec("s-slow", f"head -c {size} /dev/zero | tr '\\0' x | fold -w 79; echo; echo END-$((6*7))",
                          wait_ms=60_000)  # fmt: skip
        assert not isinstance(res, jobs.Job)
        c = _Collector(ev)
        _replays_to_the_screen(engine, "s-slow", c)
        assert "END-42" in "\n".join(engine.screen("s-slow")["lines"])
        got = list(c.events)
        assert any(e["type"] == "screen" for e in got), "no resync screen"
        assert sum(len(base64.b64decode(e["data"])) for e in got if e["type"] == "bytes") < size
    finally:
        ev.close()
    c.join()


def test_a_stream_replayed_is_the_engines_screen(engine: HostClient, attach_dir: str) -> None:
    """Bytes and the screens that replace them, replayed, give the screen,
    through a full-screen program's switches and a resize."""
    engine.attach("s-replay")
    engine.resize("s-replay", 80, 24)
    paths = HostPaths.for_name("att", attach_dir)
    ev = Events(paths, {"pid": os.getpid(), "purpose": "attach", "session": "s-replay", "read_only": True}, ["terminal"])
    try:
        ev.watch("s-replay")
        c = _Collector(ev)
        engine.exec("s-replay", "printf '\\033[?1049h\\033[2Jon-alt\\033[?1049l'; seq 1 30; echo STEP-1", wait_ms=20_000)
        _replays_to_the_screen(engine, "s-replay", c)
        assert "STEP-1" in "\n".join(engine.screen("s-replay")["lines"])
        wait_until(lambda: sum(e["type"] == "screen" for e in c.events) >= 3, T)  # the first, entering, leaving
        engine.resize("s-replay", 60, 20)
        engine.exec("s-replay", "echo STEP-2", wait_ms=20_000)
        _replays_to_the_screen(engine, "s-replay", c)
        assert "STEP-2" in "\n".join(engine.screen("s-replay")["lines"])
    finally:
        ev.close()
    c.join()


@pytest.mark.parametrize("op", ["watch"])
def test_watch_of_a_missing_session_is_a_clear_error(engine: HostClient, attach_dir: str, op: str) -> None:
    from dsh_magics.errors import NoSuchSession

    paths = HostPaths.for_name("att", attach_dir)
    ev = Events(paths, {"pid": os.getpid(), "purpose": "attach", "session": "nope", "read_only": True}, ["terminal"])
    try:
        with pytest.raises(NoSuchSession):
            ev.conn.call(op, {"session_id": "no-such-session"})
    finally:
        ev.close()


def test_a_viewer_follows_a_recreated_terminal(engine: HostClient, attach_dir: str) -> None:
    engine.attach("s-new")
    engine.exec("s-new", "echo OLD-SHELL", wait_ms=20_000)
    paths = HostPaths.for_name("att", attach_dir)
    ev = Events(paths, {"pid": os.getpid(), "purpose": "attach", "session": "s-new", "read_only": True}, ["terminal"])
    try:
        ev.watch("s-new")
        c = _Collector(ev)
        _replays_to_the_screen(engine, "s-new", c)
        engine.attach("s-new", recreate=True)
        engine.exec("s-new", "echo NEW-SHELL", wait_ms=20_000)
        _replays_to_the_screen(engine, "s-new", c)
        shown = "\n".join(engine.screen("s-new")["lines"])
        assert "NEW-SHELL" in shown and "OLD-SHELL" not in shown
    finally:
        ev.close()
    c.join()


def _voluntary_switches(pid: int, tids: set[str]) -> int:
    total = 0
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                total += sum(int(line.split()[1]) for line in f if line.startswith("voluntary_ctxt_switches"))
        except OSError:
            pass  # a thread that ended: it is woken no more
    return total


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts a thread's wake-ups in /proc")
def test_a_viewers_stream_wakes_no_thread_of_its_connection(engine: HostClient, attach_dir: str) -> None:
    """Each piece of a viewer's stream the client receives frees room in the
    host's socket, and the kernel then wakes a thread blocked in ``recv`` on
    that socket (a socket has one wait queue), once per echo; the
    connection's thread waits in ``select`` while it streams
    (host/server.py), which only input wakes. Counted with the threads'
    voluntary context switches: about one per piece before, none now."""
    engine.attach("s-wake")
    paths = HostPaths.for_name("att", attach_dir)
    info = paths.read_info()
    assert info is not None
    pid = int(info["pid"])
    before = set(os.listdir(f"/proc/{pid}/task"))
    ev = Events(paths, {"pid": os.getpid(), "purpose": "attach", "session": "s-wake", "read_only": True}, ["terminal"])
    try:
        ev.watch("s-wake")
        mine = set(os.listdir(f"/proc/{pid}/task")) - before  # the connection's thread (and its sender)
        assert mine
        c = _Collector(ev)
        wait_until(lambda: any(e["type"] == "screen" for e in c.events), T)
        start = _voluntary_switches(pid, mine)
        engine.exec("s-wake", "for i in $(seq 1 40); do echo piece-$i; sleep 0.01; done; echo PIECES-DONE", wait_ms=20_000)
        got = lambda: b"".join(base64.b64decode(e["data"]) for e in list(c.events) if e["type"] == "bytes")  # noqa: E731
        wait_until(lambda: b"PIECES-DONE" in got(), T)
        pieces = sum(e["type"] == "bytes" for e in c.events)
        woken = _voluntary_switches(pid, mine) - start
    finally:
        ev.close()
    c.join()
    assert pieces >= 20, pieces
    assert woken < pieces // 4, (woken, pieces)
