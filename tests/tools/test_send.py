"""bash_send, bash_wait's until/idle_ms/on_input and bash_exec's tty, driven
by tool calls only (every result checked against its output schema)."""

from __future__ import annotations

import re
import urllib.request

from .conftest import Agent

PASSWORD = "pw-Kx81-secret"


def test_a_repl_driven_by_an_agent(agent: Agent) -> None:
    start = agent.ok("bash_exec", {"command": "python3 -i -q", "tty": True})
    w = agent.ok("bash_wait", {"job_id": start["job_id"], "timeout_ms": 20_000})
    assert w["reason"] == "awaiting_input" and w["awaiting_input"]["prompt"] == ">>> "
    r = agent.ok("bash_send", {"text": "print(sum(range(10)))", "wait_ms": 20_000})
    assert r["reason"] == "awaiting_input" and r["output"] == "print(sum(range(10)))\n45\n>>> "
    part = agent.ok("bash_send", {"text": "print(1", "enter": False, "wait_ms": 200})
    assert part["status"] == "running"
    rest = agent.ok("bash_send", {"text": ")", "wait_ms": 20_000})
    assert "1\n>>> " in rest["output"]
    bye = agent.ok("bash_send", {"key": "ctrl-d", "wait_ms": 20_000})
    assert bye["status"] == "completed" and bye["exit_code"] == 0 and bye["reason"] == "settled"
    keys = [(i["text"], i.get("key"), i["enter"]) for i in bye["inputs"]]
    assert keys == [
        ("print(sum(range(10)))", None, True),
        ("print(1", None, False),
        (")", None, True),
        ("", "ctrl-d", False),
    ]
    assert all(i["source"] == "agent" and i["caller"] == agent.session for i in bye["inputs"])


def test_a_password_prompt_is_refused_to_the_agent(agent: Agent) -> None:
    start = agent.ok(
        "bash_exec",
        {"command": "python3 -c 'import getpass; print(len(getpass.getpass(\"Password: \")))'"},
    )
    w = agent.ok("bash_wait", {"job_id": start["job_id"], "timeout_ms": 20_000})
    assert w["awaiting_input"]["secret"] is True and w["awaiting_input"]["prompt"] == "Password: "
    assert "person" in w["note"]
    err = agent.err("bash_send", {"text": PASSWORD}, "SECRET_INPUT")
    assert "person must answer" in err["message"] and PASSWORD not in err["message"]
    # keys still work: the agent may give up on the prompt
    stop = agent.ok("bash_send", {"key": "ctrl-c", "wait_ms": 20_000})
    assert stop["status"] in ("interrupted", "completed") and stop["exit_code"] != 0
    listed = agent.ok("bash_list", {"session_id": agent.session})["terminals"][0]
    assert "awaiting_input" not in listed


def test_wait_until_a_server_is_ready(agent: Agent) -> None:
    start = agent.ok("bash_exec", {"command": "python3 -m http.server 0 --bind 127.0.0.1"})
    try:
        w = agent.ok("bash_wait", {"job_id": start["job_id"], "until": "Serving HTTP", "timeout_ms": 30_000})
        assert w["reason"] == "matched" and w["status"] == "running" and w["timed_out"] is False
        port = int(re.search(r"port (\d+)", w["match_text"]).group(1))  # type: ignore[union-attr]
        line = agent.ok("bash_read", {"since": w["match_line"]})["text"].splitlines()[0]
        assert line == w["match_text"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as page:
            assert page.status == 200
    finally:
        agent.ok("bash_interrupt")
        agent.ok("bash_wait", {"job_id": start["job_id"], "timeout_ms": 20_000})


def test_idle_and_timeout_reasons(agent: Agent) -> None:
    start = agent.ok("bash_exec", {"command": "echo one; sleep 30"})
    idle = agent.ok("bash_wait", {"job_id": start["job_id"], "idle_ms": 300, "timeout_ms": 20_000})
    assert idle["reason"] == "idle" and idle["timed_out"] is False and "one" in idle["output"]
    late = agent.ok("bash_wait", {"job_id": start["job_id"], "timeout_ms": 100, "until": "never"})
    assert late["reason"] == "timeout" and late["timed_out"] is True
    agent.ok("bash_interrupt")
    done = agent.ok("bash_wait", {"job_id": start["job_id"], "timeout_ms": 20_000})
    assert done["reason"] == "settled"


def test_bad_arguments(agent: Agent) -> None:
    start = agent.ok("bash_exec", {"command": "sleep 30"})
    e = agent.err("bash_wait", {"job_id": start["job_id"], "until": "(unclosed"}, "INVALID_ARGUMENT")
    assert e["field"] == "until" and "regular expression" in e["message"]
    agent.err("bash_wait", {"job_id": start["job_id"], "idle_ms": 0}, "INVALID_ARGUMENT")
    assert agent.err("bash_send", {"key": "f13"}, "INVALID_ARGUMENT")["field"] == "key"
    assert agent.err("bash_send", {"text": "a", "key": "tab"}, "INVALID_ARGUMENT")["field"] == "key"
    assert agent.err("bash_send", {"text": "a\nb"}, "INVALID_ARGUMENT")["field"] == "text"
    agent.err("bash_exec", {"command": "true", "tty": "yes"}, "INVALID_ARGUMENT")
    agent.ok("bash_interrupt")
    agent.ok("bash_wait", {"job_id": start["job_id"], "timeout_ms": 20_000})
    agent.err("bash_send", {"key": "ctrl-c"}, "NOT_RUNNING")
    agent.err("bash_send", {"text": "x", "session_id": agent.session + "-none"}, "NO_SUCH_SESSION")


def test_default_stdin_stays_empty(agent: Agent) -> None:
    res = agent.ok("bash_exec", {"command": "cat; echo rc=$?", "wait_ms": 20_000})
    assert res["output"] == "rc=0\n" and "awaiting_input" not in res
