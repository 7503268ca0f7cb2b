"""The result text MCP hosts may hand a model instead of structured content."""

from __future__ import annotations

from dsh_magics.mcp.render import render

JOB = {
    "job_id": "j1",
    "session_id": "s",
    "status": "completed",
    "exit_code": 2,
    "timed_out": False,
    "output": "a\nb\n",
    "output_chars": 4,
    "output_lines": 2,
    "omitted_chars": 0,
    "omitted_lines": 0,
    "dropped_lines": 0,
    "cwd": "/w",
    "duration_s": 0.25,
}


def test_a_job_result_says_what_a_model_acts_on() -> None:
    assert (
        render("bash_exec", JOB) == "job j1 in session s: completed, exit 2 in 0.25s; cwd /w\na\nb"
    )
    timed = {**JOB, "status": "running", "exit_code": None, "timed_out": True, "output": ""}
    assert render("bash_wait", timed).splitlines() == [
        "job j1 in session s: still running after 0.25s (timed out; bash_wait again to keep waiting); cwd /w",
        "(no output)",
    ]
    cut = {
        **JOB,
        "omitted_chars": 900,
        "omitted_lines": 30,
        "output_chars": 20000,
        "output_lines": 600,
    }
    assert "900 chars (30 lines) omitted in the middle, bash_read pages through them" in render(
        "bash_exec", cut
    )


def test_tools_added_later_are_shown_without_changes_here() -> None:
    # a job-shaped result of an unknown tool reads like bash_exec's, new fields included
    text = render("bash_future", {**JOB, "awaiting_input": "secret"})
    assert (
        text.startswith("job j1 in session s: completed, exit 2")
        and 'awaiting_input: "secret"' in text
    )
    assert render("bash_future", {"sent": 3}) == '{"sent":3}'


def test_errors_lead_with_the_code() -> None:
    err = {"error": {"code": "SESSION_BUSY", "message": "busy with job j1", "field": "session_id"}}
    assert render("bash_exec", err) == "SESSION_BUSY: busy with job j1 (field session_id)"


def test_listing_reading_and_the_rest() -> None:
    row = {
        "session_id": "s",
        "status": "busy",
        "cwd": "/w",
        "running": True,
        "job_id": "j1",
        "pid": 7,
        "own": True,
    }
    assert render("bash_list", {"terminals": [row], "own_session": "s"}) == (
        "1 terminal(s); your session is s\ns (yours): busy, cwd /w, pid 7, job j1 running"
    )
    assert render("bash_attach", {**row, "opened": True}).endswith("; a new shell was started")
    read = {"session_id": "s", "text": "x", "first_line": 3, "next_line": 4, "end_line": 4, "more": False,
            "omitted_chars": 0, "omitted_lines": 0, "dropped": 0, "running_job_id": None}  # fmt: skip
    assert render("bash_read", read) == "session s, lines 3..4 (next since=4)\nx"
    assert render("bash_close", {"closed": ["a", "b"], "count": 2}) == "closed 2 terminal(s): a, b"
    assert render("bash_interrupt", {"session_id": "s", "interrupted": False, "job_id": None}) == (
        "session s: nothing was running"
    )


def _row(target: str, **kw: object) -> dict[str, object]:
    return {
        "target": target, "session_id": target, "status": "completed", "job_id": "j",
        "exit_code": 0, "duration_s": 0.5, "last_line": "ok", **kw,
    }  # fmt: skip


GROUP = {
    "group_id": "g7", "status": "done", "timed_out": False, "targets": 2,
    "counts": {"completed": 2}, "merged": "group g7: 2 targets: 2 completed\n", "omitted_chars": 0,
}  # fmt: skip


def test_a_group_table_marks_what_a_model_must_know() -> None:
    """The per-target table (tests/mcp/test_group_text.py drives the common
    cases through a real server): a session column only when a target's session
    differs, prompts and target timeouts in the status, a last line on one line."""
    rows = [
        _row("ssh://web1", session_id="web1", last_line="a\tb\x1b[0m"),
        _row("w2", status="running", exit_code=None, duration_s=None, last_line="Password:",
             awaiting_input={"pid": 1, "name": "sudo", "prompt": "Password:", "secret": True}),
        _row("w3", status="running", exit_code=None, last_line="name?",
             awaiting_input={"pid": 2, "name": "read", "prompt": "name?", "secret": False}),
        _row("w4", status="interrupted", exit_code=130, timed_out=True, last_line="x" * 300),
    ]  # fmt: skip
    text = render("bash_wait", {**GROUP, "detail": rows})
    head, _, tab = text.partition("\n\nper target:\n")
    assert head == "group g7: 2 targets: 2 completed"
    lines = tab.splitlines()
    assert lines[0].split() == ["target", "session", "status", "exit", "time", "last", "line"]
    assert lines[1].split()[:3] == ["ssh://web1", "web1", "completed"] and lines[1].endswith("a\\tb\\x1b[0m")
    assert "running (secret prompt: a person answers)" in lines[2] and lines[2].endswith("Password:")
    assert "running (waits for input)" in lines[3]
    assert lines[4].split()[2:6] == ["interrupted", "(target", "timeout)", "130"] and lines[4].endswith("x" * 77 + "...")
    assert all(ln == ln.rstrip() for ln in lines)


def test_a_long_group_table_is_bounded_and_says_so() -> None:
    rows = [_row(f"node{i:04d}", last_line="y" * 60) for i in range(1024)]
    text = render("bash_read", {**GROUP, "targets": 1024, "detail": rows})
    assert len(text) < 17_000 and "node0000" in text and "node1023" in text
    assert "lines left out; the structured content has every row" in text


def test_a_group_shape_not_known_here_is_json() -> None:
    odd = {"group_id": "g1", "something": 1}
    assert render("bash_wait", odd) == '{"group_id":"g1","something":1}'
