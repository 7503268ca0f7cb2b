"""Long outputs reach the model bounded, and the full text stays reachable
through bash_read (paging) and the engine."""

from __future__ import annotations

from dsh_magics import tools

from .conftest import Agent


def test_long_output_is_bounded_and_fully_readable(agent: Agent) -> None:
    budget = 2000
    res = agent.ok("bash_exec", {"command": "seq 1 3000", "wait_ms": 20_000}, output_budget=budget)
    full = "".join(f"{i}\n" for i in range(1, 3001))
    assert len(res["output"]) <= budget
    assert res["output"].startswith("1\n2\n3\n") and res["output"].endswith("2999\n3000\n")
    assert (res["output_chars"], res["output_lines"]) == (len(full), 3000)
    assert res["omitted_chars"] > 0 and 0 < res["omitted_lines"] < 3000
    assert (
        f"{res['omitted_chars']} characters in {res['omitted_lines']} lines left out"
        in res["output"]
    )
    shown = [x for x in res["output"].splitlines() if not x.startswith("[...")]
    assert len(shown) + res["omitted_lines"] == 3000

    # the engine keeps the whole text
    assert agent.registry.result(res["job_id"]).output == full

    # bash_read pages through all of it, each page within the budget
    lines: list[str] = []
    since = 0
    while True:
        page = agent.ok("bash_read", {"since": since}, output_budget=budget)
        assert len(page["text"]) <= budget and page["first_line"] == since
        lines += page["text"].split("\n") if page["text"] else []
        if not page["more"]:
            break
        assert page["next_line"] > since
        since = page["next_line"]
    assert lines == [str(i) for i in range(1, 3001)]
    assert page["next_line"] == page["end_line"]


def test_default_budget_and_newest_lines(agent: Agent) -> None:
    res = agent.ok("bash_exec", {"command": "seq 1 20000", "wait_ms": 20_000})
    assert len(res["output"]) <= tools.OUTPUT_BUDGET_CHARS and res["omitted_lines"] > 0
    newest = agent.ok("bash_read")
    assert len(newest["text"]) <= tools.OUTPUT_BUDGET_CHARS
    assert newest["text"].endswith("19999\n20000") and newest["next_line"] == newest["end_line"]
    assert newest["omitted_lines"] > 0 and newest["more"] is False
    first = int(newest["text"].split("\n", 1)[0])
    assert newest["end_line"] - newest["first_line"] == 20001 - first
    tail = agent.ok("bash_read", {"last": 2})
    assert tail["text"] == "19999\n20000" and tail["omitted_lines"] == 0


def test_ring_overflow_is_reported(agent: Agent) -> None:
    # the ring keeps 4000 lines by default: the job's first lines are gone
    res = agent.ok("bash_exec", {"command": "seq 1 6000", "wait_ms": 20_000})
    assert res["dropped_lines"] == 2000 and res["output"].startswith("2001\n")
    page = agent.ok("bash_read", {"since": 0})
    assert page["dropped"] > 0 and page["text"].startswith("2001\n")


def test_an_overlong_line_still_advances_paging(agent: Agent) -> None:
    agent.run("head -c 50000 /dev/zero | tr '\\0' x; echo; echo after")
    page = agent.ok("bash_read", {"since": 0}, output_budget=1000)
    assert len(page["text"]) <= 1000 and "left out" in page["text"]
    assert page["next_line"] == page["first_line"] + 1 and page["more"] is True
    nxt = agent.ok("bash_read", {"since": page["next_line"]}, output_budget=1000)
    assert nxt["text"] == "after"


def test_read_while_running_shows_unfinished_line(agent: Agent) -> None:
    job = agent.ok("bash_exec", {"command": "printf 'done: 1\\nworking...'; sleep 30"})
    agent.started("working...")
    page = agent.ok("bash_read")
    assert page["text"].endswith("done: 1\nworking...") and page["running_job_id"] == job["job_id"]
    snap = agent.ok("bash_wait", {"job_id": job["job_id"], "timeout_ms": 0})
    assert snap["timed_out"] and snap["output"] == "done: 1\nworking..."
    agent.ok("bash_interrupt")
    assert agent.ok("bash_wait", {"job_id": job["job_id"]})["status"] == "interrupted"
