"""Task ids cannot be guessed (the tasks extension's MUST), yet a restarted
server finds its tasks: ``JOB~SESSION~TAG`` with an HMAC tag under this
user's key file in the hosts' runtime directory (dsh_magics/mcp/task_ids.py,
docs/mcp.md "Task ids"). Unit checks of the ids and the key file, then a real
server driven by the SDK's ``Client()`` on 2026-07-28."""

from __future__ import annotations

import json
import os
import secrets
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, SubscriptionsListenResult

from dsh_magics.host.runtime import list_names
from dsh_magics.mcp.task_ids import KEY_FILE, TaskIds, TaskKeyUnsafe, load_key

from .conftest import MODERN, STEP, ServerEnv, mcp_server
from .test_task_input import update_task
from .test_tasks import TaskHandle, Tasks, _listen_for, cancel_task, get_task, named, start_task
from .ts_clients import install, missing_tools, ts_tasks_client_argv

JOB = "bash-" + "7" * 32
SESSION = "mcp-agent"


# -- the ids -------------------------------------------------------------------
def test_an_id_names_its_job_and_verifies_under_its_key_only() -> None:
    key = secrets.token_bytes(32)
    ids = TaskIds(key, "mcp")
    tid = ids.make(JOB, SESSION)
    assert tid.startswith(f"{JOB}~{SESSION}~") and ids.check(tid) == (JOB, SESSION)
    assert TaskIds(key, "mcp").make(JOB, SESSION) == tid  # what a restarted server makes
    # another user's key, another host of the same user: another id, and each refuses the other's
    other_user, other_host = TaskIds(secrets.token_bytes(32), "mcp"), TaskIds(key, "jupyter-1")
    for other in (other_user, other_host):
        assert other.make(JOB, SESSION) != tid
        assert other.check(tid) is None and ids.check(other.make(JOB, SESSION)) is None
    # a session that itself holds the separator still round-trips
    odd = ids.make(JOB, "cmd:bash ~/x~y")
    assert ids.check(odd) == (JOB, "cmd:bash ~/x~y")


def test_a_forged_or_changed_id_is_refused() -> None:
    ids = TaskIds(secrets.token_bytes(32), "mcp")
    tid = ids.make(JOB, SESSION)
    tag = tid.rpartition("~")[2]
    flipped = tag[:-1] + ("A" if tag[-1] != "A" else "B")
    for forged in (
        f"{JOB}~{SESSION}",  # the old, guessable form
        f"{JOB}~{SESSION}~{flipped}",
        f"{JOB}~{SESSION}~{tag[:-1]}",
        f"{JOB}~{SESSION}~{tag}A",
        f"{JOB}~mcp-other~{tag}",  # the tag moved to another session
        f"bash-{'8' * 32}~{SESSION}~{tag}",  # ... or to another job
        f"~{SESSION}~{tag}",
        f"{JOB}~~{tag}",
        f"{JOB}~{SESSION}~",
        f"{JOB}~{SESSION}~{tag.upper()}",
        f"{JOB}~{SESSION}~{'é' * 22}",
        "",
        "~~",
    ):
        assert ids.check(forged) is None, forged


# -- the key file --------------------------------------------------------------
def _private_dir(tmp_path: Path) -> str:
    d = tmp_path / "run"
    d.mkdir(mode=0o700)
    return str(d)


def test_the_key_is_made_on_first_use_private_and_kept(tmp_path: Path) -> None:
    d = _private_dir(tmp_path)
    key = load_key(d)
    st = os.stat(os.path.join(d, KEY_FILE))
    assert len(key) == 32 and stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()
    assert load_key(d) == key
    assert os.listdir(d) == [KEY_FILE]  # no temporary file left


def test_servers_starting_at_once_agree_on_one_key(tmp_path: Path) -> None:
    d = _private_dir(tmp_path)
    keys: list[bytes] = []
    barrier = threading.Barrier(8)

    def load() -> None:
        barrier.wait()
        keys.append(load_key(d))

    threads = [threading.Thread(target=load) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(keys) == 8 and len(set(keys)) == 1 and sorted(os.listdir(d)) == [KEY_FILE]


@pytest.mark.parametrize("case", ["group-readable", "world-readable", "short", "symlink", "directory"])
def test_a_key_file_others_could_reach_is_refused(tmp_path: Path, case: str) -> None:
    d = _private_dir(tmp_path)
    path = os.path.join(d, KEY_FILE)
    if case == "symlink":
        target = tmp_path / "elsewhere"
        target.write_bytes(secrets.token_bytes(32))
        target.chmod(0o600)
        os.symlink(target, path)
    elif case == "directory":
        os.mkdir(path, 0o700)
    else:
        with open(path, "wb") as f:
            f.write(secrets.token_bytes(31 if case == "short" else 32))
        os.chmod(path, {"group-readable": 0o640, "world-readable": 0o604, "short": 0o600}[case])
    with pytest.raises(TaskKeyUnsafe) as err:
        load_key(d)
    assert err.value.code == "TASK_KEY_UNSAFE" and path in err.value.message
    assert "Remove it" in err.value.message or "remove it" in err.value.message


def test_the_server_refuses_an_unsafe_key_in_one_line_before_a_host_starts(server_env: ServerEnv) -> None:
    path = os.path.join(server_env.host_dir, KEY_FILE)
    with open(path, "wb") as f:
        f.write(secrets.token_bytes(32))
    os.chmod(path, 0o644)
    proc = subprocess.run(
        [sys.executable, "-m", "dsh_magics.cli", "mcp"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=STEP,
        env={**os.environ, **server_env.vars}, cwd=server_env.cwd,
    )  # fmt: skip
    assert proc.returncode == 1 and proc.stdout == ""
    assert proc.stderr.startswith(f"dsh-magics: TASK_KEY_UNSAFE: refusing the task key {path}: it has mode 0644")
    assert proc.stderr.count("\n") == 1
    assert list_names(server_env.host_dir) == []  # no host was started for nothing


# -- a real server ---------------------------------------------------------------
async def _refused(coro: object) -> str:
    with pytest.raises(MCPError) as err:
        await coro  # type: ignore[misc]
    assert err.value.error.code == INVALID_PARAMS
    return err.value.error.message


@pytest.mark.anyio
async def test_over_mcp_a_forged_id_is_an_unknown_task_and_reaches_no_job(server_env: ServerEnv) -> None:
    """The job and session of a running task (which bash_list shows any
    client) name no task; nor does a changed id or another key's. Each is
    -32602 with the very message of a task whose job does not exist, and a
    forged tasks/cancel does not touch the job."""
    ext = Tasks()
    async with mcp_server(server_env, version=MODERN, extensions=[ext]) as m:
        handle = await start_task(m, "echo go; sleep 60; echo never", wait_ms=100)
        tid = handle.task_id
        job_id, session_id = named(tid)
        key = load_key(server_env.host_dir)  # the server made it at start: the same user may read it
        assert TaskIds(key, "mcp").make(job_id, session_id) == tid
        gone = TaskIds(key, "mcp").make(f"bash-{'0' * 32}", session_id)  # a good tag, no such job
        tag = tid.rpartition("~")[2]
        forged = [
            f"{job_id}~{session_id}",
            f"{job_id}~{session_id}~{tag[:-1]}{'A' if tag[-1] != 'A' else 'B'}",
            TaskIds(secrets.token_bytes(32), "mcp").make(job_id, session_id),  # another user's key
            TaskIds(key, "other").make(job_id, session_id),  # another host's
        ]
        s = m.session.session
        missing = (await _refused(get_task(s, gone))).replace(gone, "ID")
        assert missing.startswith("Failed to retrieve task")
        for bad in forged:
            assert (await _refused(get_task(s, bad))).replace(bad, "ID") == missing, bad
            await _refused(cancel_task(s, bad))
            await _refused(update_task(s, bad, {"person-x": {"action": "accept"}}))
        with anyio.fail_after(STEP):
            await s.send_request(_listen_for(*forged), SubscriptionsListenResult)
        assert ext.notes == []  # none of them was honoured
        # the forged cancels reached no job: it still runs, and the real id works
        rows = {r["session_id"]: r for r in (await m.ok("bash_list"))["terminals"]}
        assert rows[session_id]["job_id"] == job_id and rows[session_id]["running"]
        assert (await get_task(s, tid)).status == "working"
        await cancel_task(s, tid)
        ended = await m.ok("bash_wait", {"job_id": job_id, "timeout_ms": 30_000})
        assert ended["status"] == "interrupted" and "never" not in ended["output"]


@pytest.mark.anyio
async def test_a_restarted_server_finds_its_task_under_the_same_key_only(server_env: ServerEnv) -> None:
    """The key outlives the server (it lives as long as the host's runtime
    directory): the next server accepts the id; a server whose key file was
    replaced (as another user's would be) refuses it although the job is there."""
    async with mcp_server(server_env, client="restarting", version=MODERN, extensions=[Tasks()]) as m:
        first = await start_task(m, "sleep 1; echo one", wait_ms=100)
        with anyio.fail_after(STEP):  # in a terminal of its own (the first one is busy)
            second = await m.session.session.call_tool(
                "bash_exec", {"command": "sleep 1; echo two", "wait_ms": 100, "session_id": "other"},
                allow_claimed=True,
            )  # fmt: skip
        assert isinstance(second, TaskHandle), second
    path = os.path.join(server_env.host_dir, KEY_FILE)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    async with mcp_server(server_env, client="restarting", version=MODERN, extensions=[Tasks()]) as m:
        job_id, session_id = named(first.task_id)
        await m.ok("bash_wait", {"job_id": job_id, "session_id": session_id, "timeout_ms": 30_000})
        task = await get_task(m.session.session, first.task_id)
        assert task.status == "completed" and task.result is not None
        assert task.result["structuredContent"]["output"] == "one\n"
    os.unlink(path)
    with open(path, "wb") as f:
        os.fchmod(f.fileno(), 0o600)
        f.write(secrets.token_bytes(32))
    async with mcp_server(server_env, client="restarting", version=MODERN, extensions=[Tasks()]) as m:
        job_id, session_id = named(second.task_id)
        done = await m.ok("bash_wait", {"job_id": job_id, "session_id": session_id, "timeout_ms": 30_000})
        assert done["output"] == "two\n"  # the job is there ...
        await _refused(get_task(m.session.session, second.task_id))  # ... its id names no task here


def _ts_tasks_client(server_env: ServerEnv, command: str, **mode: str) -> dict[str, Any]:
    proc = subprocess.run(
        [*ts_tasks_client_argv(), json.dumps({"command": command}), "unused", "--",
         sys.executable, "-m", "dsh_magics.cli", "mcp"],
        capture_output=True, text=True, timeout=STEP * 2, cwd=server_env.cwd,
        env={**os.environ, "MCP_TEST_SERVER_ENV": json.dumps(server_env.vars), **mode},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict[str, Any] = json.loads(proc.stdout.splitlines()[-1])
    return out


def test_the_typescript_tasks_client_resumes_a_task_through_a_new_server(server_env: ServerEnv) -> None:
    """The extension's own client (``@modelcontextprotocol/ext-tasks``) hands a
    task off, as a client about to exit does, and resumes it from its
    reference in another process, against another server process: the task
    id verifies under the key in the runtime directory and the job's result
    arrives; the same reference with a changed tag is refused."""
    why = missing_tools()
    if why:
        pytest.skip(why)
    install()  # normally done by .ci/run; a no-op when present
    gone = _ts_tasks_client(server_env, "sleep 1; echo resumed", MCP_TEST_TASK_MODE="handoff")
    assert gone["kind"] == "task", gone
    reference = gone["reference"]
    job_id, _ = named(reference["taskId"])
    back = _ts_tasks_client(
        server_env, "unused", MCP_TEST_TASK_MODE="resume", MCP_TEST_TASK_REFERENCE=json.dumps(reference)
    )
    assert back["outcome"] == "completed", back
    final = back["result"]["structuredContent"]
    assert (final["job_id"], final["output"]) == (job_id, "resumed\n"), final
    tag = reference["taskId"][-1]
    forged = {**reference, "taskId": reference["taskId"][:-1] + ("A" if tag != "A" else "B")}
    proc = subprocess.run(
        [*ts_tasks_client_argv(), "{}", "unused", "--", sys.executable, "-m", "dsh_magics.cli", "mcp"],
        capture_output=True, text=True, timeout=STEP * 2, cwd=server_env.cwd,
        env={**os.environ, "MCP_TEST_SERVER_ENV": json.dumps(server_env.vars),
             "MCP_TEST_TASK_MODE": "resume", "MCP_TEST_TASK_REFERENCE": json.dumps(forged)},
    )  # fmt: skip
    assert proc.returncode != 0 and "-32602" in proc.stderr, proc.stderr[-3000:]
