"""``dsh-magics mcp`` over stdio, driven by the MCP SDK's own client."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from typing import Any

import anyio
import psutil
import pytest
from jsonschema import Draft202012Validator

from dsh_magics import tools
from dsh_magics.host.lifecycle import choose_mode
from dsh_magics.mcp.server import session_for_client

from .conftest import STEP, Mcp, ServerEnv, mcp_server

pytestmark = pytest.mark.anyio

LOOP = "i=0; while :; do i=$((i+1)); echo line $i; sleep 0.1; done"
PROGRESS = re.compile(r"^waiting (\d+)s, (\d+) lines? of output so far$")


class Progress:
    """Collects progress notifications; ``enough`` is set after ``n`` of them."""

    def __init__(self, n: int = 1) -> None:
        self.seen: list[tuple[float, float | None, str | None]] = []
        self.n = n
        self.enough = anyio.Event()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.seen.append((progress, total, message))
        if len(self.seen) >= self.n:
            self.enough.set()


async def _pending_wait(m: Mcp, job: str, progress: Progress, outcome: dict[str, Any]) -> None:
    """A long bash_wait that the test abandons (cancels, or disconnects under)."""
    try:
        result = await m.session.call_tool(
            "bash_wait", {"job_id": job, "timeout_ms": 120_000}, progress_callback=progress
        )
        outcome["result"] = result
    except anyio.get_cancelled_exc_class():
        outcome["cancelled"] = True
        raise
    except Exception as e:  # noqa: BLE001 - the connection went away under it
        outcome["error"] = e


def _server_exited(env: ServerEnv) -> bool:
    """The server said goodbye at interpreter exit (after every thread ended)."""
    return "dsh-magics mcp: exited: the client closed the connection" in env.log_text()


# ---------------------------------------------------------------------------
async def test_initialize_lists_every_tool_with_valid_schemas(server_env: ServerEnv) -> None:
    async with mcp_server(server_env, "--in-process", client="Schema Checker 2") as m:
        assert m.init.server_info.name == "dsh-magics"
        assert m.init.capabilities.tools is not None
        listed = (await m.session.list_tools()).tools
        assert tuple(t.name for t in listed) == tools.TOOL_NAMES
        for t in listed:
            Draft202012Validator.check_schema(t.input_schema)
            assert t.input_schema == tools.validation_schema(t.name)
            assert t.description and t.description == next(
                s["description"] for s in tools.schemas() if s["name"] == t.name
            )
            assert t.output_schema is not None and t.output_schema["type"] == "object"
            Draft202012Validator.check_schema(t.output_schema)
        # the caller's own session comes from the client's name
        own = await m.ok("bash_list")
        assert (
            own["own_session"] == "mcp-Schema-Checker-2" == session_for_client("Schema Checker 2")
        )
    assert "Traceback" not in server_env.log_text()


async def test_exec_then_wait_and_a_busy_terminal(server_env: ServerEnv) -> None:
    async with mcp_server(server_env) as m:
        quick = await m.ok("bash_exec", {"command": "cd .. && X=5 && pwd", "wait_ms": 30_000})
        parent = os.path.dirname(server_env.cwd)
        assert (quick["status"], quick["exit_code"], quick["output"]) == (
            "completed",
            0,
            parent + "\n",
        )
        assert quick["session_id"] == "mcp-pytest-agent" and quick["cwd"] == parent
        started = await m.ok("bash_exec", {"command": "echo begin; sleep 1; echo $X"})
        assert set(started) == {"job_id", "session_id", "status"} and started["status"] == "running"
        busy = await m.err("bash_exec", {"command": "echo no"}, "SESSION_BUSY")
        assert started["job_id"] in busy["message"]
        done = await m.ok("bash_wait", {"job_id": started["job_id"], "timeout_ms": 30_000})
        assert (done["status"], done["exit_code"], done["output"]) == ("completed", 0, "begin\n5\n")
        text = (await m.call("bash_wait", {"job_id": started["job_id"]})).content[0].text
        assert text.startswith(
            f"job {started['job_id']} in session mcp-pytest-agent: completed, exit 0"
        )
        assert text.endswith("begin\n5")
        # another session_id reaches that session's terminal
        other = await m.run("echo $X-other", session_id="elsewhere")
        assert other["session_id"] == "elsewhere" and other["output"] == "-other\n"
        rows = {t["session_id"]: t["own"] for t in (await m.ok("bash_list"))["terminals"]}
        assert rows == {"mcp-pytest-agent": True, "elsewhere": False}


async def test_interrupt(server_env: ServerEnv) -> None:
    async with mcp_server(server_env, "--in-process") as m:
        job = (await m.ok("bash_exec", {"command": "echo go; sleep 60; echo never"}))["job_id"]
        intr = await m.ok("bash_interrupt")
        assert intr == {"session_id": "mcp-pytest-agent", "interrupted": True, "job_id": job}
        done = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000})
        assert done["status"] == "interrupted" and done["exit_code"] == 130
        assert "never" not in done["output"]
        idle = await m.call("bash_interrupt")
        assert not idle.is_error and idle.content[0].text.endswith("nothing was running")
        assert (await m.run("echo alive"))["output"] == "alive\n"


async def test_progress_during_a_long_wait_and_cancellation(server_env: ServerEnv) -> None:
    async with mcp_server(server_env) as m:
        await m.run("seq 1 500")  # earlier output in the terminal is not the job's
        job = (await m.ok("bash_exec", {"command": LOOP}))["job_id"]
        progress, outcome = Progress(n=2), {}
        async with anyio.create_task_group() as tg:
            tg.start_soon(_pending_wait, m, job, progress, outcome)
            with anyio.fail_after(STEP):
                await progress.enough.wait()
            tg.cancel_scope.cancel()
        assert outcome == {"cancelled": True}
        values = [p for p, _, _ in progress.seen]
        assert values == sorted(values) and values[0] >= 1.0
        assert {total for _, total, _ in progress.seen} == {120.0}
        counts = []
        for _, _, message in progress.seen:
            match = PROGRESS.match(message or "")
            assert match, message
            counts.append(int(match.group(2)))
        assert counts == sorted(counts) and counts[-1] > 0
        # the job kept running after the cancelled wait, and still prints
        state = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 0})
        assert state["status"] == "running" and state["timed_out"] is True
        assert counts[-1] <= state["output_lines"] < 500
        later = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 300})
        assert later["output_lines"] > state["output_lines"]
        # a wait of one second or less sends no progress; nor does one without a callback
        quiet = Progress()
        short = await m.ok(
            "bash_wait", {"job_id": job, "timeout_ms": 1000}, progress_callback=quiet
        )
        assert short["timed_out"] is True and quiet.seen == []
        await m.ok("bash_interrupt")
        done = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000})
        assert done["status"] == "interrupted"


async def test_exec_with_a_long_wait_ms_reports_progress(server_env: ServerEnv) -> None:
    async with mcp_server(server_env, "--in-process") as m:
        progress = Progress()
        res = await m.ok(
            "bash_exec",
            {"command": "sleep 1.6; echo end", "wait_ms": 30_000},
            progress_callback=progress,
        )
        assert res["status"] == "completed" and res["output"] == "end\n"
        assert progress.seen and progress.seen[0][1] == 30.0
        assert all(re.match(r"^waiting \d+s$", msg or "") for _, _, msg in progress.seen)


async def test_errors_are_tool_errors_with_stable_codes(server_env: ServerEnv) -> None:
    async with mcp_server(server_env, "--in-process") as m:
        await m.err("bash_wait", {"job_id": "no-such-job"}, "NO_SUCH_JOB")
        await m.err("bash_frobnicate", {}, "UNKNOWN_TOOL")
        bad = await m.err("bash_exec", {"command": "true", "wait_ms": -1}, "INVALID_ARGUMENT")
        assert bad["field"] == "wait_ms"
        typo = await m.err("bash_exec", {"comand": "true"}, "INVALID_ARGUMENT")
        assert typo["field"] in ("command", "comand")
        await m.err("bash_read", {"session_id": "a/b"}, "INVALID_ARGUMENT")
        await m.err("bash_close", {"session_id": "never-opened"}, "NO_SUCH_SESSION")
        text = (await m.call("bash_exec", {"command": "true", "wait_ms": -1})).content[0].text
        assert text == f"INVALID_ARGUMENT: {bad['message']} (field wait_ms)"
        # the server is unharmed
        assert (await m.run("echo fine"))["output"] == "fine\n"
    assert "Traceback" not in server_env.log_text()


#: A command that kills the terminal host it runs in (SIGKILL: a crash),
#: while the call that runs it waits for it.
KILL_HOST = (
    "kill -KILL $(grep -o '\"pid\": [0-9]*' \"$DSH_MAGICS_HOST_DIR/mcp.json\" | grep -o '[0-9]*$'); sleep 600"
)


async def test_a_lost_host_is_a_tool_error_then_a_fresh_host(server_env: ServerEnv) -> None:
    """HOST_UNAVAILABLE is a tool error like the others; the next call
    starts a fresh host and says the old terminals are gone."""
    async with mcp_server(server_env) as m:
        await m.run("X=7")
        lost = await m.err("bash_exec", {"command": KILL_HOST, "wait_ms": 60_000}, "HOST_UNAVAILABLE")
        # "starts a fresh host" from the transport; "runs in a fresh host" when the
        # event stream saw the loss first and the job's lookup started the new host
        assert "is gone" in lost["message"] and "The next call" in lost["message"]
        assert "fresh host" in lost["message"], lost["message"]
        fresh = await m.run("echo x${X}x")
        assert fresh["output"] == "xx\n" and "terminal host was restarted" in fresh["note"]
    assert "Traceback" not in server_env.log_text()


async def test_a_restarted_server_finds_terminal_cwd_and_running_job(
    server_env: ServerEnv, tmp_path
) -> None:
    place = tmp_path / "place"
    place.mkdir()
    async with mcp_server(server_env, client="restarting agent") as m:
        first = await m.run(f"cd {place} && export KEEP=7")
        assert first["cwd"] == str(place)
        job = (await m.ok("bash_exec", {"command": "echo started; sleep 120; echo finished"}))[
            "job_id"
        ]
        shell = (await m.ok("bash_list"))["terminals"][0]["pid"]
    pytest_wait(lambda: _server_exited(server_env), "the first server exits")
    async with mcp_server(server_env, client="restarting agent") as m:
        rows = (await m.ok("bash_list"))["terminals"]
        assert [(r["session_id"], r["own"], r["pid"], r["cwd"], r["job_id"]) for r in rows] == [
            ("mcp-restarting-agent", True, shell, str(place), job)
        ]
        state = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 0})
        assert state["status"] == "running" and state["output"].startswith("started")
        await m.ok("bash_interrupt")
        done = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000})
        assert done["status"] == "interrupted" and "finished" not in done["output"]
        assert (await m.run('echo "$KEEP $PWD"'))["output"] == f"7 {place}\n"


async def test_a_client_gone_mid_wait_leaves_the_job_running(server_env: ServerEnv) -> None:
    outcome: dict[str, Any] = {}
    async with anyio.create_task_group() as tg:
        async with mcp_server(server_env, client="flaky agent") as m:
            job = (await m.ok("bash_exec", {"command": "echo started; sleep 120"}))["job_id"]
            progress = Progress()
            tg.start_soon(_pending_wait, m, job, progress, outcome)
            with anyio.fail_after(STEP):
                await progress.enough.wait()
        # leaving the block closed the server's stdin while the wait was in flight
    assert "result" not in outcome
    pytest_wait(lambda: _server_exited(server_env), "the server exits while a wait is pending")
    async with mcp_server(server_env, client="flaky agent") as m:
        state = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 0})
        assert state["status"] == "running"
        await m.ok("bash_interrupt")
        assert (await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000}))[
            "status"
        ] == "interrupted"


async def test_in_process_exit_leaves_nothing(server_env: ServerEnv) -> None:
    outcome: dict[str, Any] = {}
    async with anyio.create_task_group() as tg:
        async with mcp_server(server_env, "--in-process") as m:
            await m.run("sleep 301 >/dev/null 2>&1 &")
            job = (await m.ok("bash_exec", {"command": "echo go; sleep 300"}))["job_id"]
            shell = (await m.ok("bash_list"))["terminals"][0]["pid"]
            progress = Progress()
            tg.start_soon(_pending_wait, m, job, progress, outcome)
            with anyio.fail_after(STEP):
                await progress.enough.wait()
            ours = server_env.pids()
            server = [p for p in ours if "dsh_magics.cli" in " ".join(psutil.Process(p).cmdline())]
            assert len(server) == 1 and shell in ours
            family = {
                server[0],
                *(c.pid for c in psutil.Process(server[0]).children(recursive=True)),
            }
            sleeps = [p for p in family if psutil.Process(p).name() == "sleep"]
            assert len(sleeps) == 2
    pytest_wait(lambda: not server_env.pids(), "every process of the in-process server ends")
    # the engine's watchdog (no token in its environment) ends once its owner is gone
    pytest_wait(lambda: not _alive(family), f"left: {_alive(family)}")
    # it exited on its own (the goodbye is said after every thread ended), not by a kill
    assert "exited: the client closed the connection; closed 1 terminal(s)" in server_env.log_text()
    assert not os.listdir(server_env.host_dir), "--in-process never starts a host"


async def test_session_option_and_bad_arguments(server_env: ServerEnv) -> None:
    async with mcp_server(server_env, "--in-process", "--session", "shared-one") as m:
        assert (await m.ok("bash_list"))["own_session"] == "shared-one"
        assert (await m.run("echo hi"))["session_id"] == "shared-one"
    for args, code in (
        (["--session", "a/b"], "INVALID_ARGUMENT"),
        (["--host", "no spaces"], "INVALID_ARGUMENT"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "dsh_magics.cli", "mcp", *args],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=STEP,
            env={**os.environ, **server_env.vars},
        )  # fmt: skip
        assert proc.returncode == 1 and proc.stdout == ""
        assert proc.stderr.startswith(f"dsh-magics: {code}: ") and proc.stderr.count("\n") == 1


def test_help_is_complete() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "dsh_magics.cli", "mcp", "--help"],
        capture_output=True, text=True, timeout=STEP, check=True,
    )  # fmt: skip
    for option in ("--host NAME", "--in-process", "--host-dir DIR", "--session NAME"):
        assert option in proc.stdout
    for fact in (
        "stdin/stdout",
        "'mcp'",
        "DSH_MAGICS_HOST_NAME=mcp",
        "mcp-<client name>",
        "host stop --name mcp",
    ):
        assert fact in proc.stdout
    top = subprocess.run(
        [sys.executable, "-m", "dsh_magics.cli", "--help"],
        capture_output=True,
        text=True,
        timeout=STEP,
    )
    assert re.search(r"^\s+mcp\s+serve the bash_\* agent tools", top.stdout, re.M)


def test_a_notebook_names_the_host_to_join() -> None:
    env = {"DSH_MAGICS_HOST_NAME": "mcp"}
    choice = choose_mode("auto", env)
    assert (choice.use_host, choice.forced, choice.name, choice.watch_pid) == (
        True,
        True,
        "mcp",
        None,
    )
    assert choose_mode("auto", {**env, "DSH_MAGICS_HOST": "0"}).use_host is False
    with pytest.raises(Exception, match="host name"):
        choose_mode("auto", {"DSH_MAGICS_HOST_NAME": "../x"})


def _alive(pids: Any) -> list[int]:
    out = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                out.append(pid)
        except psutil.NoSuchProcess:
            pass
    return out


def pytest_wait(pred: Any, what: str, timeout: float = 20) -> None:
    from ..conftest import wait_until

    wait_until(pred, timeout, msg=what)


async def test_in_process_sigterm_closes_the_terminals(server_env: ServerEnv) -> None:
    async with mcp_server(server_env, "--in-process") as m:
        server = int((await m.run("echo $PPID"))["output"])  # the shell's parent is the server
        await m.ok("bash_exec", {"command": "sleep 300"})
        assert "dsh_magics.cli" in " ".join(psutil.Process(server).cmdline())
        family = [server, *(c.pid for c in psutil.Process(server).children(recursive=True))]
        os.kill(server, signal.SIGTERM)
        pytest_wait(lambda: not server_env.pids(), "SIGTERM ends the server and its terminals")
    # the engine's watchdog (no token in its environment) ends once its owner is gone
    pytest_wait(lambda: not _alive(family), f"left: {_alive(family)}")
    assert "exited: terminated (exit status 143); closed 1 terminal(s)" in server_env.log_text()


def test_without_the_sdk_the_command_says_what_to_install(server_env: ServerEnv) -> None:
    code = (
        "import sys; sys.modules['mcp'] = None\n"  # as if the SDK were not installed
        "from dsh_magics.cli import main; sys.exit(main(['mcp', '--in-process']))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=STEP,
        env={**os.environ, **server_env.vars},
    )  # fmt: skip
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith("dsh-magics: MCP_UNAVAILABLE: the MCP SDK is not installed")
    assert "pip install 'dsh-magics[mcp]'" in proc.stderr and proc.stderr.count("\n") == 1


async def test_while_serving_stdin_and_stdout_are_not_the_wire(server_env: ServerEnv) -> None:
    """The event loop reads and writes private copies of the pipes (mcp/wire.py);
    fd 0 reads /dev/null and fd 1 goes to stderr, so a child's stray output
    never reaches the wire. The pipes are non-blocking only while served."""
    async with mcp_server(server_env, "--in-process") as m:
        await m.run("true")
        (server,) = [
            p for p in server_env.pids() if "dsh_magics.cli" in " ".join(psutil.Process(p).cmdline())
        ]
        assert os.readlink(f"/proc/{server}/fd/0") == os.devnull
        assert os.readlink(f"/proc/{server}/fd/1") == os.readlink(f"/proc/{server}/fd/2")
        pipes = [
            fd for fd in os.listdir(f"/proc/{server}/fd") if os.readlink(f"/proc/{server}/fd/{fd}").startswith("pipe:")
        ]
        assert pipes  # the wire, on descriptors above 2
        assert (await m.run("echo still $((1+1))"))["output"] == "still 2\n"


def test_requests_from_a_file_are_served_by_the_sdks_transport(server_env: ServerEnv, tmp_path: Any) -> None:
    """A file on stdin cannot be watched by the event loop: the SDK's own
    transport serves it. (Its end of file ends the session at once, so a
    call still running then is answered "Connection closed", as the SDK
    always did; only the first, synchronous request is checked.)"""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "file", "version": "0"}}},
    ]
    requests = tmp_path / "requests.jsonl"
    requests.write_text("".join(json.dumps(x) + "\n" for x in lines))
    with open(requests, "rb") as stdin:
        proc = subprocess.run(
            [sys.executable, "-m", "dsh_magics.cli", "mcp", "--in-process"],
            stdin=stdin,
            capture_output=True,
            env={**os.environ, **server_env.vars},
            cwd=server_env.cwd,
            timeout=STEP,
        )
    replies = {r.get("id"): r for r in map(json.loads, proc.stdout.decode().splitlines())}
    assert replies[1]["result"]["serverInfo"]["name"] == "dsh-magics", proc.stderr
    assert proc.returncode == 0 and b"Traceback" not in proc.stderr
