"""The alternate-screen gate: full-screen drawing is kept from the line ring,
whatever the read boundaries."""

from dsh_magics.terminal.core.altscreen import AltScreenGate

DATA = b"before\r\n\x1b[?1049h\x1b[Hdrawn ~\r\n~\x1b[?1049lafter\r\n"


def ring_bytes(pieces: list[bytes]) -> bytes:
    gate = AltScreenGate()
    out = b""
    for data in pieces:
        for piece, on_alt, _switch in gate.split(data):
            if not on_alt:
                out += piece
    return out


def test_drawing_on_the_alternate_screen_skips_the_ring_at_every_cut() -> None:
    for cut in range(len(DATA) + 1):
        got = ring_bytes([DATA[:cut], DATA[cut:]])
        assert b"drawn" not in got and b"~" not in got, cut
        assert got.startswith(b"before\r\n") and got.endswith(b"after\r\n"), cut


def test_modes_set_together_and_47_count() -> None:
    assert ring_bytes([b"a\x1b[?1;47hx\x1b[?47lb"]) == b"a\x1b[?1;47hb"


def test_other_private_modes_pass() -> None:
    assert ring_bytes([b"\x1b[?25lx\x1b[?1hy"]) == b"\x1b[?25lx\x1b[?1hy"


def test_the_last_screen_is_kept_when_the_readers_idle_found_the_lock_taken() -> None:
    """A program's last screen is what the reader saw when it went idle on
    the alternate screen. An idle that finds the lock taken (a look at the
    screen, a live view's refresh) is skipped; what was on the screen then
    must still be kept before the next output (a pager's exit) lands. It
    kept the first page once: tests/magics/test_screen_magic.py::
    test_a_live_view_draws_the_screen_while_less_runs_then_the_result failed
    under load with a stale page."""
    import threading
    from typing import Any, cast

    from dsh_magics import jobs
    from dsh_magics.terminal.core.jobcore import JobCore
    from dsh_magics.terminal.core.markers import MarkerScanner

    core = JobCore("alt", 100, job_table=jobs.JobTable(), emit=None, scanner=MarkerScanner(), cwd=None)
    core.running = cast(Any, object())  # a job runs (idle looks only while one does)
    core.feed(b"\x1b[?1049h\x1b[H\x1b[2Jpage one\r\n")
    core.idle()
    assert core.full_screen is not None and core.full_screen[0] == "page one"
    core.feed(b"\x1b[H\x1b[2Jpage two\r\n")  # the person pressed G
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        with core.lock:
            taken.set()
            done.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert taken.wait(10)
    core.idle()  # the reader's idle, skipped: another thread holds the lock
    done.set()
    holder.join(10)
    core.feed(b"\x1b[H\x1b[2Jbye\r\n\x1b[?1049l")  # the program clears on its way out, then leaves
    assert core.full_screen is not None and core.full_screen[0] == "page two", core.full_screen
