"""``bash_list``'s ``typed``: who typed what into a terminal (its input record),
with the agent's commands as ``source: agent`` and secrets as ``[secret]``."""

from __future__ import annotations

from .conftest import Agent

PASSWORD = "pw-Tq81-never-shown"


def test_bash_list_says_who_typed_what(agent: Agent) -> None:
    agent.ok("bash_exec", {"command": "echo by-the-agent", "wait_ms": 20_000})
    own = agent.session
    assert own is not None
    # A person answers a password prompt in the agent's terminal (dsh-magics answer does this).
    job = agent.registry.exec(own, "read -rs -p 'Password: ' p; echo \"n=${#p}\"", tty=True, source="notebook")
    assert not isinstance(job, dict)
    agent.registry.wait(job.id, timeout=20, on_input=True)
    agent.registry.send(own, PASSWORD, wait_ms=20_000, source="person", secret=True)
    (row,) = agent.ok("bash_list", {"session_id": own})["terminals"]
    typed = [(t["kind"], t["source"], t["text"]) for t in row["typed"]]
    assert typed[-3:] == [
        ("command", "agent", "echo by-the-agent"),
        ("command", "notebook", "read -rs -p 'Password: ' p; echo \"n=${#p}\""),
        ("input", "person", "[secret]"),
    ]
    assert row["typed"][-3]["caller"] == own
    assert PASSWORD not in repr(agent.ok("bash_list", {}))
