"""A scripted agent driving real bash terminals with tool calls only."""

from __future__ import annotations

from dsh_magics import tools
from dsh_magics.terminal import Registry

from ..conftest import Gate
from .conftest import VALIDATED, Agent, closed_cleanly, pids_with_session_env, wait_until


def test_scripted_agent_loop(tmp_path, prefix: str) -> None:
    registry = Registry(login=False)
    me, other = f"{prefix}loop-me", f"{prefix}loop-other"
    agent = Agent(registry, me)
    try:
        # attach in a chosen directory; the terminal is new
        att = agent.ok("bash_attach", {"cwd": str(tmp_path)})
        assert att["session_id"] == me and att["opened"] is True and att["own"] is True
        assert att["status"] == "idle" and att["cwd"] == str(tmp_path) and att["running"] is False

        # a quick command with wait_ms comes back finished, state persists
        res = agent.ok("bash_exec", {"command": "X=42; echo start; pwd", "wait_ms": 20_000})
        assert res["status"] == "completed" and res["exit_code"] == 0 and res["timed_out"] is False
        assert res["output"] == f"start\n{tmp_path}\n" and res["omitted_chars"] == 0
        res = agent.ok("bash_exec", {"command": "echo $X; false", "wait_ms": 20_000})
        assert (res["output"], res["exit_code"]) == ("42\n", 1)

        # attaching again reports the same shell
        again = agent.ok("bash_attach")
        assert again["opened"] is False and again["pid"] == att["pid"]

        # a long job: exec returns at once with a job id
        long = agent.ok("bash_exec", {"command": "echo tick; sleep 30; echo never"})
        assert set(long) == {"job_id", "session_id", "status"}
        assert long["status"] == "running" and long["session_id"] == me
        job = long["job_id"]

        # a short wait times out and leaves it running
        waited = agent.ok("bash_wait", {"job_id": job, "timeout_ms": 50})
        assert waited["timed_out"] is True and waited["status"] == "running"
        assert waited["exit_code"] is None

        # read while it runs: its output so far, and which job is running
        read = wait_until(
            lambda: (r := agent.ok("bash_read", {"last": 5}))["text"].endswith("tick") and r,
            10,
            msg="tick appears in the terminal",
        )
        assert read["running_job_id"] == job and read["next_line"] == read["end_line"]
        listed = agent.ok("bash_list", {"session_id": me})["terminals"]
        assert listed[0]["status"] == "busy" and listed[0]["job_id"] == job

        # the busy terminal refuses a second command
        busy = agent.err("bash_exec", {"command": "echo no"}, "SESSION_BUSY")
        assert job in busy["message"]

        # Ctrl-C; the job settles as interrupted, the shell survives
        intr = agent.ok("bash_interrupt")
        assert intr == {"session_id": me, "interrupted": True, "job_id": job}
        done = agent.ok("bash_wait", {"job_id": job, "timeout_ms": 20_000})
        assert done["status"] == "interrupted" and done["timed_out"] is False
        assert done["exit_code"] == 130 and done["signal"] == 2
        assert "tick" in done["output"] and "never" not in done["output"]
        assert agent.ok("bash_interrupt")["interrupted"] is False
        assert agent.run("echo $X")["output"] == "42\n"

        # a prompt: the wait returns when the job waits for input; the agent answers
        ask = agent.ok(
            "bash_exec", {"command": "read -p 'Continue? [y/N] ' a; echo \"answer=$a\"", "tty": True}
        )
        w = agent.ok("bash_wait", {"job_id": ask["job_id"], "timeout_ms": 20_000})
        assert w["reason"] == "awaiting_input" and w["status"] == "running"
        assert w["awaiting_input"]["prompt"] == "Continue? [y/N] " and not w["awaiting_input"]["secret"]
        screen = agent.ok("bash_screen")  # the prompt is where the cursor waits
        row = screen["lines"][screen["cursor_row"]]
        assert row.endswith("Continue? [y/N]") and screen["cursor_col"] == len(row) + 1
        sent = agent.ok("bash_send", {"text": "y", "wait_ms": 20_000})
        assert sent["status"] == "completed" and sent["output"] == "y\nanswer=y\n"
        assert [(i["source"], i["caller"], i["text"]) for i in sent["inputs"]] == [("agent", me, "y")]
        agent.err("bash_send", {"text": "y"}, "NOT_RUNNING")

        # a second session through an explicit session_id
        second = agent.ok(
            "bash_exec", {"command": "echo other", "session_id": other, "wait_ms": 20_000}
        )
        assert second["session_id"] == other and second["output"] == "other\n"
        rows = {t["session_id"]: t for t in agent.ok("bash_list")["terminals"]}
        assert set(rows) == {me, other}
        assert rows[me]["own"] is True and rows[other]["own"] is False
        assert all(r["status"] == "idle" and r["running"] is False for r in rows.values())

        # jobs are scoped to their session: waiting needs the session's id
        gate = Gate(tmp_path / "gate")
        slow = agent.ok("bash_exec", {"command": f"{gate.shell}; echo late", "session_id": other})
        agent.err("bash_wait", {"job_id": slow["job_id"]}, "NO_SUCH_JOB")
        gate.open()
        late = agent.ok("bash_wait", {"job_id": slow["job_id"], "session_id": other})
        assert late["output"] == "late\n"

        # close the other terminal, then everything
        shell_pid = rows[other]["pid"]
        assert agent.ok("bash_close", {"session_id": other}) == {"closed": [other], "count": 1}
        assert [t["session_id"] for t in agent.ok("bash_list")["terminals"]] == [me]
        assert agent.ok("bash_close", {"all": True}) == {"closed": [me], "count": 1}
        assert agent.ok("bash_list")["terminals"] == []
        wait_until(lambda: not pids_with_session_env(f"{prefix}loop-"), 10, msg="shells exit")
        assert shell_pid not in [t["pid"] for t in agent.ok("bash_list")["terminals"]]
    finally:
        closed_cleanly(registry, f"{prefix}loop-")
    # every one of the seven tools produced results that matched their schemas
    assert set(tools.TOOL_NAMES) <= set(VALIDATED)


def test_exec_without_attach_opens_the_terminal(agent: Agent) -> None:
    res = agent.ok("bash_exec", {"command": "echo $DSH_MAGICS_SESSION", "wait_ms": 20_000})
    assert res["output"] == f"{agent.session}\n"
    assert agent.ok("bash_list", {"session_id": agent.session})["terminals"][0]["own"] is True


def test_openai_style_string_arguments(agent: Agent) -> None:
    res = agent.ok("bash_exec", '{"command": "echo json", "wait_ms": 20000}')
    assert res["output"] == "json\n"
    assert agent.ok("bash_list", "")["own_session"] == agent.session


def test_wait_ms_that_runs_out_returns_the_job(agent: Agent) -> None:
    res = agent.ok("bash_exec", {"command": "echo go; sleep 30", "wait_ms": 20})
    assert set(res) == {"job_id", "session_id", "status"} and res["status"] == "running"
    agent.started("go")
    agent.ok("bash_interrupt")
    assert agent.ok("bash_wait", {"job_id": res["job_id"]})["status"] == "interrupted"


def test_recreate_replaces_the_shell(agent: Agent) -> None:
    first = agent.ok("bash_attach")
    agent.run("export KEEP=1")
    fresh = agent.ok("bash_attach", {"recreate": True})
    assert fresh["opened"] is True and fresh["pid"] != first["pid"]
    wait_until(lambda: not _alive(first["pid"]), 10, msg="old shell exits")
    assert agent.run("echo ${KEEP:-gone}")["output"] == "gone\n"


def test_a_dead_shell_is_replaced_by_the_next_command(agent: Agent) -> None:
    res = agent.run("exit 3")
    assert res["status"] == "shell_exited" and "note" in res
    assert agent.ok("bash_list", {"session_id": agent.session})["terminals"][0]["status"] == "dead"
    again = agent.run("echo back")
    assert again["output"] == "back\n" and again["fresh_shell"] is True


def test_close_all_with_session_id_is_refused(agent: Agent) -> None:
    agent.ok("bash_attach")
    err = agent.err("bash_close", {"all": True, "session_id": agent.session}, "INVALID_ARGUMENT")
    assert err["field"] == "all"
    assert agent.run("echo still")["output"] == "still\n"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] not in (b"Z", b"X")
    except OSError:
        return False
