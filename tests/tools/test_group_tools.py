"""The agent tools on groups: bash_exec with targets, bash_wait/bash_read/bash_interrupt on the group id (results checked against the output schemas)."""

from __future__ import annotations

from tests.conftest import wait_until
from tests.tools.conftest import Agent


def _names(agent: Agent, spec: str) -> list[str]:
    return [f"{agent.session}-{spec}"]


def test_exec_on_targets_returns_a_group_and_wait_merges(agent: Agent) -> None:
    started = agent.ok("bash_exec", {"command": "echo same; cd /tmp", "targets": _names(agent, "m[1-3]")})
    assert set(started) == {"group_id", "status", "targets", "nodes"} and started["targets"] == 3
    assert started["group_id"].startswith("g") and started["nodes"] == f"{agent.session}-m[1-3]"
    done = agent.ok("bash_wait", {"job_id": started["group_id"], "timeout_ms": 60_000})
    assert done["status"] == "done" and not done["timed_out"] and done["counts"] == {"completed": 3}
    assert "detail" not in done  # compact by default
    lines = done["merged"].splitlines()
    assert lines[1] == f"exit 0: {agent.session}-m[1-3]"
    assert lines[3:6] == [f"{agent.session}-m[1-3] (3)", "----------------", "same"]
    # state persists per member: each target's terminal stayed in /tmp
    again = agent.ok("bash_exec", {"command": "pwd; echo $((RANDOM))", "targets": _names(agent, "m[1-3]")})
    res = agent.ok("bash_wait", {"job_id": again["group_id"], "timeout_ms": 60_000, "detail": True, "diff": True})
    assert [r["last_line"] != "" for r in res["detail"]] == [True] * 3
    assert all(r["status"] == "completed" and r["exit_code"] == 0 for r in res["detail"])
    assert " differs from " in res["merged"] and "\n /tmp\n" in res["merged"]  # /tmp is common context in the diff
    read = agent.ok("bash_read", {"group_id": again["group_id"]})
    assert read["group_id"] == again["group_id"] and read["status"] == "done"


def test_interrupt_a_group_and_unreachable_members(agent: Agent) -> None:
    started = agent.ok(
        "bash_exec",
        {"command": "echo started; sleep 300", "targets": [*_names(agent, "i[1-2]"), "cmd:false"], "fanout": 3},
    )
    gid = started["group_id"]

    def both_started() -> bool:
        res = agent.ok("bash_read", {"group_id": gid, "detail": True})
        return res["counts"] == {"running": 2, "failed": 1} and all(
            r["last_line"] == "started" for r in res["detail"] if r["status"] == "running"
        )

    wait_until(both_started, timeout=60, msg="two members' sleep started, one unreachable")
    hit = agent.ok("bash_interrupt", {"group_id": gid})
    assert hit["count"] == 2 and hit["interrupted"] == f"{agent.session}-i[1-2]"
    res = agent.ok("bash_wait", {"job_id": gid, "timeout_ms": 30_000, "detail": True})
    assert res["counts"] == {"interrupted": 2, "failed": 1}
    failed = [r for r in res["detail"] if r["status"] == "failed"]
    assert failed[0]["target"] == "cmd:false" and failed[0]["code"] == "TARGET_UNREACHABLE"
    assert "TARGET_UNREACHABLE: cmd:false" in res["merged"]


def test_bad_group_calls_are_clear_errors(agent: Agent) -> None:
    for args, field, words in (
        ({"command": "true", "targets": []}, "targets", "must not be empty"),
        ({"command": "true", "targets": ["@no-such-group"]}, "targets", "no group named"),
        ({"command": "true", "targets": ["n[1-"]}, "targets", "malformed range"),
        ({"command": "true", "targets": ["a"], "fanout": 0}, "fanout", "from 1 to"),
        ({"command": "true", "targets": ["n[1-10000]"]}, "targets", "at most 1024"),
        ({"command": "true", "targets": ["a"], "wait_ms": 5}, "wait_ms", "not with targets"),
        ({"command": "true", "fanout": 2}, "fanout", "only with targets"),
    ):
        err = agent.err("bash_exec", args, "INVALID_ARGUMENT")
        assert err["field"] == field and words in err["message"], (args, err)
    assert agent.err("bash_wait", {"job_id": "g999999"}, "NO_SUCH_JOB")["field"] == "job_id"
    assert agent.err("bash_read", {"group_id": "nonsense"}, "NO_SUCH_JOB")
    assert agent.err("bash_wait", {"job_id": "g1", "until": "x"}, "INVALID_ARGUMENT")["field"] == "until"
    assert agent.err("bash_read", {"detail": True}, "INVALID_ARGUMENT")["field"] == "detail"
    assert agent.registry.list() == [] or all(not t.session_id.startswith(agent.session or "") for t in agent.registry.list())


def test_another_callers_group_is_not_found(agent: Agent) -> None:
    started = agent.ok("bash_exec", {"command": "true", "targets": _names(agent, "o1")})
    other = Agent(agent.registry, f"{agent.session}-other")
    assert other.err("bash_wait", {"job_id": started["group_id"]}, "NO_SUCH_JOB")
    agent.ok("bash_wait", {"job_id": started["group_id"], "timeout_ms": 30_000})


def test_a_secret_prompt_on_a_member_is_shown_and_not_typed_by_the_agent(agent: Agent) -> None:
    member = f"{agent.session}-pw"
    started = agent.ok(
        "bash_exec", {"command": "case $DSH_MAGICS_SESSION in *-pw) read -s -p 'Password: ' x </dev/tty;; esac; echo got", "targets": [member, f"{agent.session}-ok"]}
    )
    gid = started["group_id"]

    def secret_row() -> dict | None:
        res = agent.ok("bash_read", {"group_id": gid, "detail": True})
        rows = [r for r in res["detail"] if r.get("awaiting_input", {}).get("secret")]
        return res if rows else None

    early = agent.ok("bash_wait", {"job_id": gid, "timeout_ms": 60_000})  # returns for the prompt
    assert early["reason"] == "awaiting_input" and early["status"] == "running" and not early["timed_out"]
    res = wait_until(secret_row, timeout=30, msg="the member's password prompt seen")
    assert f"secret prompt (only a person may answer): {member}" in res["merged"]
    held = agent.ok("bash_wait", {"job_id": gid, "timeout_ms": 300, "on_input": False})
    assert held["timed_out"] and "reason" not in held
    assert agent.err("bash_send", {"session_id": member, "text": "hunter2"}, "SECRET_INPUT")
    agent.ok("bash_interrupt", {"group_id": gid})
    done = agent.ok("bash_wait", {"job_id": gid, "timeout_ms": 30_000})
    assert done["counts"] == {"interrupted": 1, "completed": 1}
