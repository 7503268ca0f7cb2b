"""The panel's state logic against real terminals (real bash in real PTYs).

Every test uses a private ``Registry(login=False)`` and its own
:class:`PanelModel` (so counters start at zero), attached as a view the way
the widget attaches, and closes both.  Waits poll a condition with a deadline.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import psutil
import pytest

from dsh_magics.terminal import Registry
from dsh_magics.widgets.panel_html import jobs_html, render_html, render_text
from dsh_magics.widgets.panel_model import PanelModel, shared_model
from dsh_magics.widgets.panel_state import PanelState
from dsh_magics.widgets.panel_view import Snapshot
from tests.conftest import wait_until

DEFAULT = "nb-default"


@pytest.fixture
def reg() -> Iterator[Registry]:
    r = Registry(login=False)
    try:
        yield r
    finally:
        pids = [t.pid for t in r.list() if t.pid]
        for pid in list(pids):
            try:
                pids += [c.pid for c in psutil.Process(pid).children(recursive=True)]
            except psutil.NoSuchProcess:
                pass
        r.close_all()
        wait_until(lambda: not [p for p in pids if _alive(p)], 10, msg="no shell or child left")


@pytest.fixture
def model(reg: Registry) -> Iterator[PanelModel]:
    m = PanelModel(reg, coalesce=0.02, tick=0.05)
    yield m
    m._stop_thread()


def attached(
    model: PanelModel, default: str = DEFAULT, **kw: object
) -> tuple[PanelState, list[Snapshot]]:
    """A PanelState fed by the model the way the widget is fed."""
    st = PanelState(model, default, **kw)  # type: ignore[arg-type]
    seen: list[Snapshot] = []

    def view(snap: Snapshot) -> None:
        st.accept(snap)
        seen.append(snap)

    model.add_view(view)
    return st, seen


def sleeping(reg: Registry, session: str) -> bool:
    """The job's ``sleep`` process exists (so a Ctrl-C now reaches it)."""
    pid = reg.info(session).pid
    if pid is None:
        return False
    try:
        return any(c.name() == "sleep" for c in psutil.Process(pid).children(recursive=True))
    except psutil.NoSuchProcess:
        return False


def test_lists_every_terminal_with_status_cwd_running_job_and_age(
    reg: Registry, model: PanelModel, tmp_path
) -> None:
    st, _ = attached(model)
    assert st.attach("a").kind == "ok"
    assert st.attach("b", str(tmp_path)).kind == "ok"
    assert st.send("sleep 30").kind == "ok"  # b is selected after attaching it
    wait_until(lambda: sleeping(reg, "b"), 10, msg="sleep running")

    snap = model.snapshot
    a, b = snap.find("a"), snap.find("b")
    assert a is not None and b is not None
    assert (a.status, a.job_id) == ("idle", None)
    assert (b.status, b.cwd) == ("busy", str(tmp_path))
    assert b.job_id is not None and b.job_started_at is not None
    view = st.view(now=b.job_started_at + 75)
    html = render_html(view)
    assert f'data-session="b" data-status="busy" data-job="{b.job_id}"' in html
    assert "1m15s" in html  # the running job's age
    assert "b" in render_text(view) and "busy" in render_text(view)

    assert st.interrupt().kind == "ok"
    # The terminal turns idle a moment before its job settles; both arrive.
    wait_until(lambda: model.snapshot.find("b").status == "idle", 10, msg="b idle again")
    wait_until(lambda: model.snapshot.jobs[0].outcome == "interrupted", 10, msg="job settled")


def test_send_follows_output_and_the_job_settles_in_the_list(
    reg: Registry, model: PanelModel
) -> None:
    st, _ = attached(model)
    notice = st.send("echo hello; echo world")
    assert notice.kind == "ok" and DEFAULT in notice.text
    wait_until(lambda: model.snapshot.jobs and model.snapshot.jobs[0].outcome == "ok", 10)
    out = st.view().output
    assert out.lines[-2:] == ("hello", "world")
    assert (out.total, out.dropped, out.retained, out.hidden) == (2, 0, 2, 0)
    job = model.snapshot.jobs[0]
    assert job.command == "echo hello; echo world" and job.exit_code == 0

    st.send("sh -c 'exit 3'")
    wait_until(lambda: model.snapshot.jobs[0].status != "running", 10)
    assert (model.snapshot.jobs[0].outcome, model.snapshot.jobs[0].exit_code) == ("exit 3", 3)



def test_a_multi_line_command_shows_its_first_line_and_how_many_follow(
    reg: Registry, model: PanelModel
) -> None:
    """The job row keeps a multi-line command's lines apart: the first line as written,
    "… (+N lines)", and the whole text, escaped, as the cell's tooltip."""
    st, _ = attached(model)
    command = 'for w in "<b>$x</b>" \\(y\\); do\n  echo "$w"\ndone\n'
    assert st.send(command).kind == "ok"
    wait_until(lambda: model.snapshot.jobs and model.snapshot.jobs[0].outcome == "ok", 10)
    html = jobs_html(st.view())
    assert html in render_html(st.view())
    first = 'for w in &quot;&lt;b&gt;$x&lt;/b&gt;&quot; \\(y\\); do'
    whole = first + '\n  echo &quot;$w&quot;\ndone'
    cell = f'<td class="dsh-panel-cmd" data-more="2" title="{whole}">{first}'
    assert cell + '<span class="dsh-muted"> … (+2 lines)</span></td>' in html
    assert "<b>" not in html and "done" not in html.replace(f'title="{whole}"', "")
    text = render_text(st.view())
    assert 'for w in "<b>$x</b>" \\(y\\); do … (+2 lines)' in text
    # A one-line command is its own cell, as written, with no tooltip.
    assert st.send("echo  two   spaces").kind == "ok"
    wait_until(lambda: model.snapshot.jobs[0].command == "echo  two   spaces", 10)
    assert '<td class="dsh-panel-cmd">echo  two   spaces</td>' in jobs_html(st.view())

def test_a_running_job_is_followed_live(reg: Registry, model: PanelModel) -> None:
    st, _ = attached(model)
    st.send("echo first; sleep 30; echo never")
    wait_until(lambda: "first" in st.view().output.lines, 10, msg="first line while running")
    wait_until(lambda: sleeping(reg, DEFAULT), 10)
    out = st.view().output
    assert out.job is not None and out.job.running
    assert "following job" in render_text(st.view())
    st.interrupt()
    wait_until(lambda: st.view().output.job is None, 10, msg="job settled")
    assert "never" not in st.view().output.lines


def test_session_busy_and_other_errors_come_back_inline(
    reg: Registry, model: PanelModel, tmp_path
) -> None:
    st, _ = attached(model)
    st.send("sleep 30")
    busy = st.send("echo again")
    assert (busy.kind, busy.code) == ("error", "SESSION_BUSY")
    assert st.view().notice == busy
    assert "SESSION_BUSY: " in render_html(st.view())

    assert st.send("   ").code == "INVALID_ARGUMENT"
    assert st.attach("", None).code == "INVALID_ARGUMENT"
    assert st.attach("bad/id").code == "INVALID_ARGUMENT"
    missing = st.attach("c", str(tmp_path / "missing"))
    assert missing.code == "INVALID_ARGUMENT" and not reg.exists("c")
    st.select("never-opened")
    assert st.recreate().code == "NO_SUCH_SESSION"
    assert st.close().code == "NO_SUCH_SESSION"
    assert st.interrupt().code == "NO_SUCH_SESSION"
    st.select(DEFAULT)
    wait_until(lambda: sleeping(reg, DEFAULT), 10)
    st.interrupt()
    wait_until(lambda: model.snapshot.jobs[0].outcome == "interrupted", 10)
    assert st.interrupt().kind == "info"  # idle: nothing to interrupt, not an error


def test_attach_recreate_close_and_close_all(reg: Registry, model: PanelModel, tmp_path) -> None:
    st, _ = attached(model)
    st.attach("w", str(tmp_path))
    assert st.selected == "w" and reg.info("w").cwd == str(tmp_path)
    st.send("cd / && export MARK=1")
    wait_until(lambda: not reg.info("w").job_id, 10)
    old_pid = reg.info("w").pid
    assert st.recreate().kind == "ok"
    assert reg.info("w").pid != old_pid
    # A new shell keeps the directory it was in but not the exported variable.
    res = reg.exec("w", 'echo "[$MARK]"', wait_ms=10_000)
    assert res.output == "[]\n"

    assert st.close().kind == "ok"
    assert not reg.exists("w") and st.selected == DEFAULT

    st.attach("x")
    st.attach("y")
    armed = st.close_all()
    assert armed.kind == "info" and st.confirm_close_all and len(reg.list()) == 2
    st.send("true")  # any other action disarms it (runs in y, the selected one)
    assert not st.confirm_close_all
    st.close_all()
    done = st.close_all(confirm=True)
    assert done.text == "closed 2 terminal(s)" and reg.list() == []
    assert model.snapshot.terminals == () and st.selected == DEFAULT


def test_output_counts_dropped_and_hidden_lines() -> None:
    reg = Registry(login=False, max_lines=50)
    try:
        st = PanelState(PanelModel(reg), DEFAULT, tail=10)
        reg.exec(DEFAULT, "seq 1 120", wait_ms=10_000)
        out = st.view().output
        assert (out.total, out.dropped, out.retained) == (120, 70, 50)
        assert out.lines == tuple(str(i) for i in range(111, 121)) and out.hidden == 40
        text = render_text(st.view())
        assert "50 lines retained · 70 dropped · showing the last 10" in text
    finally:
        reg.close_all()


def test_follow_off_holds_the_output_still(reg: Registry, model: PanelModel) -> None:
    st, _ = attached(model)
    reg.exec(DEFAULT, "echo one", wait_ms=10_000)
    st.set_follow(False)
    reg.exec(DEFAULT, "echo two", wait_ms=10_000)
    assert st.view().output.lines == ("one",) and st.view().output.paused
    st.set_follow(True)
    assert st.view().output.lines == ("one", "two")


def test_selection_falls_back_when_the_terminal_is_closed_elsewhere(
    reg: Registry, model: PanelModel
) -> None:
    a, _ = attached(model)
    b, _ = attached(model)
    a.attach("shared")
    b.select("shared")
    reg.close("shared")  # a magic, a script or another panel closes it
    wait_until(lambda: b.selected == DEFAULT, 10, msg="b falls back")
    assert b.notice is not None and "'shared' was closed" in b.notice.text
    # A session chosen before it exists is kept (it starts on the first command).
    b.select("later")
    model.refresh()
    assert b.selected == "later"


def test_idle_panel_sleeps_without_timeout_and_ticks_only_while_busy(
    reg: Registry, model: PanelModel
) -> None:
    st, _ = attached(model)
    reg.attach(DEFAULT)
    wait_until(lambda: model.snapshot.find(DEFAULT) is not None, 10)
    assert model.wait_timeout() is None
    wait_until(lambda: model.waits_without_timeout >= 1, 10, msg="refresher parked")
    ticks = model.tick_refreshes
    # Observation window (not synchronisation), several ticks long: an idle
    # model refreshes only when an event asks (the shell may still print a
    # last byte of start-up), never on a timer.
    threading.Event().wait(model.tick * 8)
    assert model.tick_refreshes == ticks
    assert model.wait_timeout() is None

    st.send("sleep 30")
    wait_until(lambda: sleeping(reg, DEFAULT), 10)
    assert model.wait_timeout() == model.tick
    wait_until(lambda: model.tick_refreshes >= ticks + 3, 10, msg="ticks while busy")
    st.interrupt()
    wait_until(lambda: model.wait_timeout() is None, 10, msg="idle again")


def test_output_bursts_are_coalesced(reg: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    model = PanelModel(reg, coalesce=0.1)
    detach = model.add_view(lambda snap: None)
    listings: list[int] = []
    real_all = reg.jobs.all

    def counted_all() -> list:
        listings.append(1)
        return real_all()

    try:
        reg.exec(DEFAULT, "true", wait_ms=10_000)
        wait_until(lambda: model.snapshot.jobs and model.snapshot.jobs[0].outcome == "ok", 10)
        monkeypatch.setattr(reg.jobs, "all", counted_all)
        events, refreshes = model.event_count, model.refresh_count
        done = reg.exec(DEFAULT, "seq 1 300000", wait_ms=30_000)  # ~2 MB: hundreds of output events
        # This job's row, not the finished ``true`` above: the model refreshes
        # up to ``coalesce`` after the job ended (the race behind this test's
        # rare failures, len(listings) == 0).
        wait_until(
            lambda: model.snapshot.jobs
            and (model.snapshot.jobs[0].job_id, model.snapshot.jobs[0].status) == (done.job_id, "completed"),
            10,
        )
        new_events = model.event_count - events
        new_refreshes = model.refresh_count - refreshes
        assert new_events > 100
        assert new_refreshes * 10 < new_events, (new_refreshes, new_events)
        # Job rows are re-read for job events only (start, end), not for output.
        assert 1 <= len(listings) <= 3, len(listings)
    finally:
        detach()


def test_the_last_view_leaving_stops_the_refresher(reg: Registry) -> None:
    model = shared_model(reg)
    assert shared_model(reg) is model  # one model per registry
    detach_a = model.add_view(lambda s: None)
    detach_b = model.add_view(lambda s: None)
    assert model.running
    thread = model._thread
    assert thread is not None and thread.is_alive()
    detach_a()
    assert model.running
    detach_b()
    assert not model.running and not thread.is_alive()
    # No subscription is left either: events no longer reach the model.
    count = model.event_count
    reg.exec(DEFAULT, "echo x", wait_ms=10_000)
    assert model.event_count == count


def test_lines_option_is_validated(reg: Registry) -> None:
    from dsh_magics.errors import InvalidArgument

    with pytest.raises(InvalidArgument):
        PanelState(PanelModel(reg), DEFAULT, tail=0)


def test_no_shell_outlives_the_registry(reg: Registry) -> None:
    reg.exec(DEFAULT, "sleep 30 &", wait_ms=10_000)
    pid = reg.info(DEFAULT).pid
    kids = [c.pid for c in psutil.Process(pid).children(recursive=True)]
    reg.close_all()
    assert kids  # the background sleep
    wait_until(lambda: not [p for p in [pid, *kids] if _alive(p)], 10, msg="no orphans")


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_a_snapshot_taken_while_closing_never_shows_the_terminal_as_not_started(
    reg: Registry, model: PanelModel, tmp_path
) -> None:
    """The engine drops a terminal from its listing before its ``closed``
    event arrives (under the terminal host, over another socket, later
    still). A refresh in that window (the refresher woken by the shell's last
    output) used to leave the selection on the closed terminal, offered as
    "second (not started)". Here the refresh is taken exactly in that window."""
    st, _ = attached(model)
    other, _ = attached(model)
    assert st.attach("second", str(tmp_path)).kind == "ok"
    other.select("second")
    term = reg._terms["second"]
    real_close = term.close
    mid: list[tuple[str, list[tuple[str, str]], str, list[tuple[str, str]]]] = []

    def close_then_refresh() -> None:
        real_close()
        snap = model.refresh()  # unlisted, and no closed event delivered yet
        assert snap.find("second") is None
        v, o = st.view(), other.view()
        mid.append((v.selected, v.session_options(), o.selected, o.session_options()))

    term.close = close_then_refresh  # type: ignore[method-assign]
    notice = st.close()
    assert notice.kind == "ok" and notice.text == "closed 'second'"
    assert mid, "the mid-close refresh ran"
    sel, opts, other_sel, other_opts = mid[0]
    assert (sel, other_sel) == (DEFAULT, DEFAULT)
    assert [sid for _, sid in opts] == [DEFAULT] == [sid for _, sid in other_opts]
    assert st.selected == DEFAULT and st.notice == notice
    assert other.notice is not None and "'second' was closed" in other.notice.text


def test_a_close_mark_is_kept_when_the_listing_predates_it(
    reg: Registry, model: PanelModel
) -> None:
    """A ``closed`` event that lands while ``list()`` is in flight must not be
    cancelled by that older listing (which still shows the terminal)."""
    st, _ = attached(model)
    st.attach("gone")
    real_list = reg.list

    def list_then_close() -> list:
        listed = real_list()  # still shows "gone"...
        if any(t.session_id == "gone" for t in listed):
            reg.close("gone")  # ...and its closed event lands before we return
        return listed

    reg.list = list_then_close  # type: ignore[method-assign]
    try:
        snap = model.refresh()
    finally:
        del reg.list
    assert snap.find("gone") is not None  # the stale listing
    snap = model.refresh()
    assert snap.find("gone") is None and "gone" in snap.closed
    assert st.selected == DEFAULT


def test_exit_stops_every_panel_refresher_before_the_terminals_close() -> None:
    """The panels' refresher threads are a VIEWS step of dsh_magics.shutdown:
    at exit they stop first, and the terminals close after them."""
    import subprocess
    import sys

    code = (
        "from dsh_magics import shutdown\n"
        "from dsh_magics.terminal import Registry\n"
        "from dsh_magics.widgets.panel_model import shared_model\n"
        "reg = Registry(login=False)\n"
        "order = []\n"
        "model = shared_model(reg)\n"
        "model.add_view(lambda snap: None)\n"
        "assert model.running\n"
        "shutdown.register(shutdown.TERMINALS, lambda: order.append(model.running))\n"
        "shutdown.run()\n"
        "assert order == [False], order\n"
        "print('ok')\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
