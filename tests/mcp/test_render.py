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
