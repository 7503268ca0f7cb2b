"""Every error code, and malformed argument sets: each gets its error, names
the offending field, and leaves the terminals working."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dsh_magics import tools
from dsh_magics.errors import ERROR_CODES
from dsh_magics.terminal import Registry

from .conftest import Agent, check_result, closed_cleanly

A_JOB_ID = "bash-" + "0" * 32

MALFORMED: list[tuple[str, str, Any, str]] = [
    # (case, tool, arguments, field the message must name)
    ("wrong type: command", "bash_exec", {"command": 42}, "command"),
    ("wrong type: wait_ms string", "bash_exec", {"command": "true", "wait_ms": "100"}, "wait_ms"),
    ("wrong type: wait_ms float", "bash_exec", {"command": "true", "wait_ms": 1.5}, "wait_ms"),
    ("wrong type: wait_ms bool", "bash_exec", {"command": "true", "wait_ms": True}, "wait_ms"),
    ("wrong type: recreate", "bash_attach", {"recreate": "yes"}, "recreate"),
    ("wrong type: session_id", "bash_list", {"session_id": ["a"]}, "session_id"),
    ("wrong type: since", "bash_read", {"since": None}, "since"),
    ("wrong type: job_id", "bash_wait", {"job_id": 7}, "job_id"),
    ("unknown key", "bash_exec", {"command": "true", "timeout": 5}, "timeout"),
    ("unknown key only", "bash_list", {"verbose": True}, "verbose"),
    ("non-string key", "bash_list", {1: 2}, "1"),
    ("negative wait_ms", "bash_exec", {"command": "true", "wait_ms": -1}, "wait_ms"),
    ("negative timeout_ms", "bash_wait", {"job_id": A_JOB_ID, "timeout_ms": -5}, "timeout_ms"),
    (
        "wait_ms over the maximum",
        "bash_exec",
        {"command": "true", "wait_ms": tools.MAX_WAIT_MS + 1},
        "wait_ms",
    ),
    ("huge integer", "bash_wait", {"job_id": A_JOB_ID, "timeout_ms": 10**30}, "timeout_ms"),
    ("negative since", "bash_read", {"since": -1}, "since"),
    ("last zero", "bash_read", {"last": 0}, "last"),
    ("missing command", "bash_exec", {}, "command"),
    ("missing job_id", "bash_wait", {"timeout_ms": 10}, "job_id"),
    ("empty command", "bash_exec", {"command": ""}, "command"),
    ("blank command", "bash_exec", {"command": "  \n\t"}, "command"),
    ("empty session_id", "bash_exec", {"command": "true", "session_id": ""}, "session_id"),
    ("empty job_id", "bash_wait", {"job_id": ""}, "job_id"),
    ("empty cwd", "bash_attach", {"cwd": ""}, "cwd"),
    ("1 MB command", "bash_exec", {"command": "echo " + "x" * 1_000_000}, "command"),
    (
        "session_id with a slash",
        "bash_exec",
        {"command": "true", "session_id": "a/b"},
        "session_id",
    ),
    ("session_id with a newline", "bash_attach", {"session_id": "a\nb"}, "session_id"),
    ("arguments not an object", "bash_list", [1, 2], "arguments"),
    ("arguments not JSON", "bash_exec", '{"command": ', "arguments"),
    ("arguments JSON array", "bash_exec", '["ls"]', "arguments"),
]


@pytest.mark.parametrize(
    ("case", "tool", "arguments", "field"), MALFORMED, ids=[m[0] for m in MALFORMED]
)
def test_malformed_arguments(
    agent: Agent, case: str, tool: str, arguments: Any, field: str
) -> None:
    before = agent.ok("bash_exec", {"command": "echo before; cd /", "wait_ms": 20_000})
    err = agent.err(tool, arguments, "INVALID_ARGUMENT")
    assert err["message"].startswith(f"{field}:"), err
    assert err.get("field") == field
    assert len(err["message"]) < 1000  # never echoes a megabyte back
    # the terminal is untouched and still works: same shell, same state
    after = agent.ok("bash_exec", {"command": "echo after; pwd", "wait_ms": 20_000})
    assert after["output"] == "after\n/\n" and before["session_id"] == after["session_id"]
    rows = agent.ok("bash_list")["terminals"]
    assert [(r["session_id"], r["status"]) for r in rows] == [(agent.session, "idle")]


def test_several_violations_are_all_named(agent: Agent) -> None:
    err = agent.err("bash_exec", {"wait_ms": -1, "colour": "red"}, "INVALID_ARGUMENT")
    for name in ("command", "wait_ms", "colour"):
        assert name in err["message"]


def test_limits_are_inclusive(agent: Agent) -> None:
    res = agent.ok("bash_exec", {"command": "true", "wait_ms": tools.MAX_WAIT_MS})
    assert res["exit_code"] == 0
    res = agent.ok("bash_wait", {"job_id": res["job_id"], "timeout_ms": 0})
    assert res["status"] == "completed"
    big = ": " + "x" * (tools.MAX_COMMAND_CHARS - 12) + "; echo ok"
    assert len(big) <= tools.MAX_COMMAND_CHARS
    assert agent.ok("bash_exec", {"command": big, "wait_ms": 20_000})["output"] == "ok\n"


def test_integral_floats_count_as_integers(agent: Agent) -> None:
    assert agent.ok("bash_exec", {"command": "echo f", "wait_ms": 20000.0})["output"] == "f\n"


def test_unknown_tool(agent: Agent) -> None:
    err = agent.err("bash_run", {"command": "ls"}, "UNKNOWN_TOOL")
    assert "bash_exec" in err["message"]
    assert agent.err(None, {}, "UNKNOWN_TOOL")  # type: ignore[arg-type]


def test_no_such_session(agent: Agent) -> None:
    for tool in ("bash_read", "bash_interrupt", "bash_close"):
        err = agent.err(tool, {}, "NO_SUCH_SESSION")
        assert agent.session in err["message"]
    assert agent.ok("bash_list", {"session_id": "nobody-here"})["terminals"] == []
    assert agent.run("echo fine")["output"] == "fine\n"


def test_no_such_job(agent: Agent) -> None:
    err = agent.err("bash_wait", {"job_id": A_JOB_ID}, "NO_SUCH_JOB")
    assert A_JOB_ID in err["message"]
    agent.err("bash_wait", {"job_id": "x" * 200}, "NO_SUCH_JOB")
    assert agent.run("echo fine")["output"] == "fine\n"


def test_session_busy(agent: Agent) -> None:
    job = agent.ok("bash_exec", {"command": "echo go; sleep 30"})["job_id"]
    err = agent.err("bash_exec", {"command": "echo hi"}, "SESSION_BUSY")
    assert err["details"]["job_id"] == job
    agent.err("bash_attach", {"cwd": "/"}, "SESSION_BUSY")
    agent.started("go")
    agent.ok("bash_interrupt")
    assert agent.ok("bash_wait", {"job_id": job})["status"] == "interrupted"
    assert agent.run("echo free")["output"] == "free\n"


def test_missing_cwd_is_refused_before_anything_changes(agent: Agent, tmp_path) -> None:
    agent.ok("bash_attach", {"cwd": str(tmp_path)})
    err = agent.err("bash_attach", {"cwd": str(tmp_path / "nope")}, "INVALID_ARGUMENT")
    assert "cwd" in err["message"]
    assert agent.run("pwd")["output"] == f"{tmp_path}\n"


def test_no_own_session_means_session_id_is_required(registry: Registry, prefix: str) -> None:
    anonymous = Agent(registry, None)
    err = anonymous.err("bash_exec", {"command": "true"}, "INVALID_ARGUMENT")
    assert err["field"] == "session_id"
    assert anonymous.ok("bash_list")["own_session"] is None
    sid = f"{prefix}anon"
    try:
        assert anonymous.run("echo named", session=sid)["output"] == "named\n"
        # without a session of its own, a caller waits on jobs by id alone
        job = anonymous.ok("bash_exec", {"command": "echo by-id", "session_id": sid})["job_id"]
        assert anonymous.ok("bash_wait", {"job_id": job})["output"] == "by-id\n"
        other = anonymous.err("bash_wait", {"job_id": job, "session_id": "x"}, "NO_SUCH_JOB")
        assert other["field"] == "job_id" and sid in other["message"]
    finally:
        registry.close(sid)


def test_bad_caller_session_is_reported_not_raised(registry: Registry) -> None:
    res = check_result(
        "bash_list", tools.call("bash_list", {}, caller_session="a/b", registry=registry)
    )
    assert res["error"]["code"] == "INVALID_ARGUMENT" and res["error"]["field"] == "caller_session"


def test_too_many_sessions(prefix: str) -> None:
    registry = Registry(login=False, max_sessions=2)
    agent = Agent(registry, f"{prefix}cap-0")
    try:
        agent.run("true")
        agent.run("true", session=f"{prefix}cap-1")
        err = agent.err(
            "bash_exec", {"command": "true", "session_id": f"{prefix}cap-2"}, "TOO_MANY_SESSIONS"
        )
        assert "2" in err["message"]
        agent.err("bash_attach", {"session_id": f"{prefix}cap-3"}, "TOO_MANY_SESSIONS")
        assert agent.run("echo ok")["output"] == "ok\n"
        agent.ok("bash_close", {"session_id": f"{prefix}cap-1"})
        assert agent.run("echo now", session=f"{prefix}cap-2")["output"] == "now\n"
    finally:
        closed_cleanly(registry, f"{prefix}cap-")


def test_shell_exited(prefix: str) -> None:
    # A "shell" that exits during start-up: the terminal cannot open.
    registry = Registry(login=False, shell="/bin/false")
    agent = Agent(registry, f"{prefix}dead")
    try:
        agent.err("bash_attach", {}, "SHELL_EXITED")
        agent.err("bash_exec", {"command": "true"}, "SHELL_EXITED")
        assert agent.ok("bash_list")["terminals"] == []
    finally:
        closed_cleanly(registry, f"{prefix}dead")


def test_unexpected_failures_become_error_results(agent: Agent) -> None:
    class Broken(Registry):
        def list(self):  # type: ignore[override]
            raise RuntimeError("boom")

    broken = Broken.__new__(Broken)  # never started: only list() is called
    res = check_result("bash_list", tools.call("bash_list", {}, registry=broken))
    assert res["error"]["code"] == tools.INTERNAL_ERROR_CODE and "boom" in res["error"]["message"]


def test_every_error_code_has_a_test() -> None:
    """The codes the tools can produce are the engine's codes; this file
    produces each of the seven named by the tool contract."""
    source = open(__file__).read()
    for code in (
        "INVALID_ARGUMENT",
        "UNKNOWN_TOOL",
        "SESSION_BUSY",
        "NO_SUCH_SESSION",
        "NO_SUCH_JOB",
        "TOO_MANY_SESSIONS",
        "SHELL_EXITED",
    ):
        assert code in ERROR_CODES
        assert source.count(f'"{code}"') >= 2, code
    json.dumps(tools.ERROR_RESULT)
