"""Return values, reprs and persistence of the magics (in-process IPython,
real bash in a real PTY)."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import pytest
from IPython.utils.capture import capture_output

from dsh_magics.notebook.values import JobHandle, StreamedResult, TerminalTable
from dsh_magics.terminal import ReadResult, Result, TerminalInfo
from tests.conftest import Gate, wait_until


def run(ip: Any, code: str) -> Any:
    """Run a cell like a user would (history on, displayhook active)."""
    res = ip.run_cell(code, store_history=True)
    res.raise_error()
    return res.result


def test_state_persists_between_magics(ip, tmp_path) -> None:
    d = tmp_path / "work dir"
    d.mkdir()
    ip.run_line_magic(
        "bash_exec", f"--wait cd '{d}' && export DSH_T_VAR=kept && greet() {{ echo hi-$1; }}"
    )
    with capture_output():
        r = ip.run_line_magic("bash_exec", "--wait pwd; echo $DSH_T_VAR; greet there")
    assert r.lines == [str(d), "kept", "hi-there"]
    assert r.cwd == str(d)


def test_exec_returns_a_job_handle_and_wait_returns_a_result(ip, session: str) -> None:
    j = ip.run_line_magic("bash_exec", "echo one; echo two >&2; (exit 3)")
    assert isinstance(j, JobHandle)
    assert str(j) == j.id and j.session_id == session
    r = run(ip, f"%bash_wait --no-raise-error {j}")
    assert isinstance(r, Result)
    assert (r.status, r.exit_code, r.timed_out) == ("completed", 3, False)
    assert r.lines == ["one", "two"] and r.output == "one\ntwo\n"
    assert r.duration >= 0
    assert j.done and j.result is not None and j.result.exit_code == 3
    d = r.to_dict()
    assert json.loads(json.dumps(d))["exit_code"] == 3
    assert json.loads(json.dumps(j.to_dict()))["result"]["output"] == "one\ntwo\n"


def test_wait_without_id_waits_for_the_latest_job_of_the_default_session(ip, session: str) -> None:
    ip.run_line_magic("bash_exec", "--session other-" + session + " echo elsewhere")
    j = ip.run_line_magic("bash_exec", "echo mine")
    with capture_output():
        r = ip.run_line_magic("bash_wait", "")
    assert r.job_id == j.id and r.output == "mine\n"
    ip.run_line_magic("bash_close", f"--session other-{session}")


def test_wait_accepts_a_unique_prefix(ip) -> None:
    j = ip.run_line_magic("bash_exec", "echo p")
    with capture_output():
        r = ip.run_line_magic("bash_wait", j.id[:14])
    assert r.job_id == j.id


def test_wait_ms_returns_the_result_when_fast_and_the_handle_when_slow(ip) -> None:
    fast = ip.run_line_magic("bash_exec", "--timeout 10 echo quick")
    assert isinstance(fast, Result) and fast.output == "quick\n"
    slow = ip.run_line_magic("bash_exec", "--timeout 0.05 sleep 30")
    assert isinstance(slow, JobHandle) and not slow.done
    slow.interrupt()
    assert slow.wait(10).status == "interrupted"


def test_cell_form_runs_a_multi_line_script(ip) -> None:
    r = ip.run_cell_magic(
        "bash_exec",
        "--wait",
        "total=0\nfor i in 1 2 3; do\n  total=$((total + i))\ndone\ncat <<EOF\ntotal=$total\nEOF\n",
    )
    assert r.output == "total=6\n"


def test_wait_timeout_returns_a_running_snapshot_and_the_job_continues(ip) -> None:
    j = ip.run_line_magic("bash_exec", "echo started; sleep 30")
    wait_until(lambda: "started" in j.output, 10)
    with capture_output():
        r = ip.run_line_magic("bash_wait", "--timeout 0.1")
    assert r.timed_out and r.status == "running" and r.exit_code is None
    assert r.output == "started\n" and "timed out" in (r.note or "")
    assert not j.done
    with capture_output() as cap:
        res = ip.run_line_magic("bash_interrupt", "")
    assert res.status == "interrupted" and res.exit_code == 130
    assert j.done
    # the terminal survived the interrupt
    assert ip.run_line_magic("bash_exec", "--timeout 10 echo alive").output == "alive\n"
    assert cap.stderr == ""


def test_interrupt_on_an_idle_terminal_says_so(ip) -> None:
    ip.run_line_magic("bash_attach", "")
    with capture_output() as cap:
        assert ip.run_line_magic("bash_interrupt", "") is None
    assert "idle" in cap.stdout


def test_result_reprs_show_status_exit_duration_and_a_counted_tail(ip) -> None:
    r = ip.run_line_magic("bash_exec", "--no-raise-error --timeout 10 seq 1 100; (exit 2)")
    # The extension's formatters draw it (the engine's dataclass has no reprs).
    bundle, _ = ip.display_formatter.format(r)
    text, html = bundle["text/plain"], bundle["text/html"]
    assert r.job_id in text and "failed (exit 2)" in text and "s" in text.splitlines()[0]
    assert "60 lines omitted" in text and text.splitlines()[-1] == "100"
    assert "\n1\n" not in text  # the head is left out, the tail shown
    assert "exit 2" in html and "60 lines omitted" in html and ">100<" not in html
    assert "100</pre>" in html and r.job_id in html


def test_job_handle_reprs_while_running_and_after(ip) -> None:
    j = ip.run_line_magic("bash_exec", "echo working; sleep 30")
    wait_until(lambda: "working" in j.output, 10)
    assert "running" in repr(j) and "working" in repr(j)
    assert "running" in j._repr_html_()
    assert j._ipython_display_ is None  # plain IPython: the normal reprs
    j.interrupt()
    j.wait(10)
    assert "interrupted" in repr(j) and "exit 130" in j._repr_html_()


def test_streamed_output_goes_to_stdout_as_it_arrives(ip, gate: Gate) -> None:
    """The job prints 'first', then waits until the test has *seen* 'first'
    on stdout before printing 'second': only live streaming can pass (else
    the gate gives up after 30 s and the job says so)."""
    seen = threading.Event()

    class Recorder:
        def __init__(self) -> None:
            self.parts: list[str] = []

        def write(self, s: str) -> int:
            self.parts.append(s)
            if "first" in "".join(self.parts) and not seen.is_set():
                seen.set()
                threading.Thread(target=gate.open, daemon=True).start()
            return len(s)

        def flush(self) -> None:
            pass

    import sys

    rec, old = Recorder(), sys.stdout
    sys.stdout = rec
    try:
        cmd = f"echo first; timeout 30 {gate.shell} || echo not-streamed; echo second"
        r = ip.run_line_magic("bash_exec", "--wait " + cmd)
    finally:
        sys.stdout = old
    out = "".join(rec.parts)
    assert seen.is_set()
    assert out.index("first") < out.index("second")
    assert out.count("first") == 1 and out.count("second") == 1
    assert r.output == "first\nsecond\n"


def test_streamed_result_is_not_printed_twice(ip) -> None:
    with capture_output() as cap:
        run(ip, "%bash_exec --wait for i in 1 2 3; do echo line-$i; done")
    # the lines once (streamed), then the header line as the cell's value
    assert cap.stdout.count("line-2") == 1
    assert "Out[" in cap.stdout and "] ok in" in cap.stdout
    with capture_output() as cap:
        run(ip, "r = %bash_exec --wait echo assigned")
    assert cap.stdout == "assigned\n"  # assigned: streamed, no value shown
    with capture_output() as cap:
        run(ip, "r")
    # displayed again in a later cell: the full repr
    assert "] ok in" in cap.stdout and "assigned" in cap.stdout
    assert isinstance(ip.user_ns["r"], StreamedResult) and isinstance(ip.user_ns["r"], Result)


def test_read_returns_the_retained_output(ip) -> None:
    ip.run_line_magic("bash_exec", "--timeout 10 printf 'r1\\nr2\\nr3\\n'")
    rr = ip.run_line_magic("bash_read", "--lines 2")
    assert isinstance(rr, ReadResult) and rr.lines == ["r2", "r3"]
    fmt, _ = ip.display_formatter.format(rr)
    assert "r3" in fmt["text/plain"] and fmt["text/plain"].startswith("[")
    assert "<pre" in fmt["text/html"]


def test_list_marks_the_default_session_and_shows_named_ones(ip, session: str) -> None:
    other = f"{session}-second"
    info = ip.run_line_magic("bash_attach", f"--session {other} --cwd /")
    assert isinstance(info, TerminalInfo) and info.cwd == "/"
    ip.run_line_magic("bash_attach", "")
    table = ip.run_line_magic("bash_list", "")
    assert isinstance(table, TerminalTable) and table.default_session == session
    ids = [i.session_id for i in table]
    assert session in ids and other in ids
    text = repr(table)
    assert f"default session: {session}" in text and f"* [{session}]" in text
    assert "★" in table._repr_html_()
    json.dumps(table.to_dict())
    fmt, _ = ip.display_formatter.format(info)
    assert other in fmt["text/plain"] and other in fmt["text/html"]
    with capture_output() as cap:
        ip.run_line_magic("bash_close", f"--session {other}")
    assert "closed" in cap.stdout
    assert other not in [i.session_id for i in ip.run_line_magic("bash_list", "")]


def test_attach_recreate_gives_a_fresh_shell(ip) -> None:
    before = ip.run_line_magic("bash_attach", "").pid
    ip.run_line_magic("bash_exec", "--timeout 10 export DSH_GONE=1")
    after = ip.run_line_magic("bash_attach", "--recreate")
    assert after.pid != before
    assert (
        ip.run_line_magic("bash_exec", "--timeout 10 echo ${DSH_GONE:-unset}").output
        == "unset\n"
    )
    assert (
        not os.path.exists(f"/proc/{before}/status") or "Z" in open(f"/proc/{before}/status").read()
    )


@pytest.mark.parametrize("assign", [False, True])
def test_live_view_is_updated_in_place_from_a_background_thread(ip, live, gate: Gate, assign: bool) -> None:
    """Under a kernel, %bash_exec opens one output area (a display id) that a
    background thread re-renders until the job settles, without another cell."""
    code = f"echo tick-1; {gate.shell}; for i in 2 3 4 5; do echo tick-$i; done"
    with capture_output() as cap:
        run(ip, ("j = " if assign else "") + "%bash_exec " + code)
        j = ip.user_ns["j"] if assign else ip.user_ns["_"]
        assert isinstance(j, JobHandle)
        wait_until(lambda: _updated_with(cap, "tick-1"), 20, msg="a live update while the job runs")
        gate.open()
        wait_until(lambda: j.done, 20)

        def final_update() -> bool:
            ups = [o for o in cap.outputs if o.update]
            return bool(ups) and "ok in" in ups[-1].data["text/plain"]

        wait_until(final_update, 10)
    shown = [o for o in cap.outputs if not o.update]
    updates = [o for o in cap.outputs if o.update]
    assert len(shown) == 1, "one output area, not one per line"
    display_id = shown[0].transient["display_id"]
    assert all(o.transient["display_id"] == display_id for o in updates)
    assert len(updates) >= 2
    assert "running" in updates[0].data["text/plain"]
    final = updates[-1].data
    assert "tick-5" in final["text/plain"] and "exit 0" in final["text/html"]
    # the returned handle is not rendered a second time (plain IPython's
    # displayhook still writes its bare "Out[n]:" prompt; ipykernel's does not)
    assert "bash-" not in cap.stdout and "tick" not in cap.stdout


def _updated_with(cap, text: str) -> bool:  # type: ignore[no-untyped-def]
    return any(text in o.data["text/plain"] for o in list(cap.outputs) if o.update)


def test_live_wait_streams_into_one_display(ip, live, gate: Gate) -> None:
    def opener() -> None:  # once w-1 is shown live, let the job go on
        wait_until(lambda: _updated_with(cap, "w-1"), 20, msg="w-1 shown live")
        gate.open()

    with capture_output() as cap:
        threading.Thread(target=opener, daemon=True).start()
        r = run(ip, f"%bash_exec --wait echo w-1; timeout 30 {gate.shell} || echo not-live; echo w-2; echo w-3")
    assert r.output == "w-1\nw-2\nw-3\n"
    shown = [o for o in cap.outputs if not o.update]
    assert len(shown) == 1
    last = [o for o in cap.outputs if o.update][-1].data["text/plain"]
    assert "ok in" in last and "w-3" in last
    assert "w-" not in cap.stdout  # nothing appended, no second display of the result


def test_a_wait_on_a_prompt_returns_and_says_how_to_answer(ip) -> None:
    j = ip.run_line_magic("bash_exec", "echo asking; read -r secret </dev/tty")
    wait_until(lambda: "asking" in j.output, 10)
    with capture_output() as cap:
        r = ip.run_line_magic("bash_wait", "--timeout 20")
    assert not r.timed_out and r.status == "running" and r.reason == "awaiting_input"
    assert "waits for input" in r.note and "%bash_send" in r.note, r.note
    assert "waits for input" in cap.stdout + str(r)
    with capture_output():
        res = ip.run_line_magic("bash_interrupt", "")
    assert res.status == "interrupted" and res.exit_code == 130


class _Recording:
    """The real engine, with a log of each snapshot a view pulls from it."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self.pulled: list[tuple[int | None, int]] = []  # (tail_lines, lines shipped)

    def result(self, job_id: str, tail_lines: int | None = None) -> Result:
        r = self._engine.result(job_id, tail_lines=tail_lines)
        self.pulled.append((tail_lines, len(r.lines)))
        return r

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


def test_a_live_view_pulls_only_the_lines_it_draws(ip) -> None:
    """Through the host every refresh ships what it pulls: a running view
    asks for its tail (and says how much it left out), never the whole output."""
    from dsh_magics.notebook.following import LiveView
    from tests.magics.conftest import magics_of

    engine = _Recording(magics_of(ip).registry)
    j = ip.run_line_magic("bash_exec", "seq 1 500; echo waiting; sleep 30")
    try:
        wait_until(lambda: "waiting" in j.output, 10)
        published: list[dict[str, Any]] = []
        view = LiveView(engine, j.job, lambda **kw: published.append(kw), tail=20)
        view.show()
        view.refresh()
        assert engine.pulled and all(p == (20, 20) for p in engine.pulled), engine.pulled
        text = published[-1]["data"]["text/plain"]
        assert "481 lines omitted" in text and text.splitlines()[-1] == "waiting"
        assert "\n482\n" in text and "\n481\n" not in text
    finally:
        j.interrupt()
        j.wait(10)
