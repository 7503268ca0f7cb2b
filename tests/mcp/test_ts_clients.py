"""``dsh-magics mcp`` driven by clients on the MCP TypeScript SDK (what most
desktop and IDE hosts are built on): the MCP Inspector's CLI, one call per
process, and a script on ``@modelcontextprotocol/sdk`` running many calls on
one connection. Both check structured content against the tools' output
schemas, also on errors, which the Python SDK's client does not.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from dsh_magics import tools
from dsh_magics.errors import ERROR_CODES

from .conftest import ServerEnv, mcp_server, parse_error_text
from .test_mcp_server import KILL_HOST
from .ts_clients import inspector_argv, install, missing_tools, ts_client_argv

SERVER = [sys.executable, "-m", "dsh_magics.cli", "mcp", "--in-process"]
#: The server with its terminals in a terminal host (for HOST_UNAVAILABLE).
HOST_SERVER = SERVER[:-1]
CALL_TIMEOUT = 120


@pytest.fixture(scope="module")
def ts_clients() -> None:
    why = missing_tools()
    if why:
        pytest.skip(why)
    install()  # normally done by .ci/run; a no-op when present


def _server_env(env: ServerEnv, **extra: str) -> dict[str, str]:
    out = {**env.vars, **extra}
    if os.environ.get("PYTHONPATH"):
        out.setdefault("PYTHONPATH", os.environ["PYTHONPATH"])
    return out


def inspector(
    env: ServerEnv, tmp_path: Path, *method: str, server: list[str] = SERVER, **server_env: str
) -> tuple[int, Any, str]:
    """One ``mcp-inspector --cli`` run: (exit status, its JSON, stderr)."""
    # The Inspector gives a server 15 s to start and answer initialize; a
    # server start (about 1 s idle) took longer under a loaded run's CPU
    # contention (load average 20 on 2 cores: "Connection timed out after
    # 15000 ms", a flake). The run's own bound is CALL_TIMEOUT.
    argv = [*inspector_argv(), "--cli", "--connect-timeout", str(CALL_TIMEOUT * 1000)]
    for k, v in _server_env(env, **server_env).items():
        argv += ["-e", f"{k}={v}"]
    argv += ["--cwd", env.cwd, *server, *method]
    proc = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT,
        # its catalog file, else created under ~/.mcp-inspector
        env={**os.environ, "MCP_CATALOG_PATH": str(tmp_path / "catalog.json")},
    )
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        data = None
    return proc.returncode, data, proc.stderr


def call(
    env: ServerEnv, tmp_path: Path, tool: str, *args: str, server: list[str] = SERVER, **server_env: str
) -> tuple[int, Any]:
    argv = ["--method", "tools/call", "--tool-name", tool]
    for a in args:
        argv += ["--tool-arg", a]
    code, data, err = inspector(env, tmp_path, *argv, server=server, **server_env)
    assert data is not None, err
    return code, data


def assert_tool_error(data: dict[str, Any], code: str) -> dict[str, Any]:
    """A tool error as every client must see it: isError, ``CODE: message``, no
    structured content (which the output schema would refuse)."""
    assert data.get("isError") is True, data
    assert "structuredContent" not in data, data
    (content,) = data["content"]
    error = parse_error_text(content["text"])
    assert error["code"] == code, content["text"]
    return error


# ---------------------------------------------------------------------------
def test_inspector_lists_the_tools_with_portable_schemas(
    ts_clients: None, server_env: ServerEnv, tmp_path: Path
) -> None:
    code, data, err = inspector(server_env, tmp_path, "--method", "tools/list", "--strict")
    assert code == 0, err  # --strict: exit 6 on an error-severity schema problem
    assert tuple(t["name"] for t in data["tools"]) == tools.TOOL_NAMES
    for t in data["tools"]:
        assert t["outputSchema"]["type"] == "object"
        assert t["inputSchema"] == tools.validation_schema(t["name"])


#: A tool error that one call to a fresh server produces:
#: (tool, arguments, code, the server's extra environment).
FreshCase = tuple[str, dict[str, Any], str, dict[str, str]]


def fresh_server_cases(tmp_path: Path) -> list[FreshCase]:
    """Every stable code a first call can get (the rest need state from an
    earlier call: :data:`STEPS`)."""
    fakes = tmp_path / "shells"
    fakes.mkdir(exist_ok=True)
    old = fakes / "oldbash"
    old.write_text("#!/bin/sh\necho 'GNU bash, version 4.2.46(2)-release'\n")
    dying = fakes / "dying"
    dying.write_text('#!/bin/sh\n[ "$1" = --version ] && exit 1\nexit 3\n')
    for f in (old, dying):
        f.chmod(0o755)
    return [
        ("bash_wait", {"job_id": "no-such-job"}, "NO_SUCH_JOB", {}),
        ("bash_exec", {"command": ":", "wait_ms": -5}, "INVALID_ARGUMENT", {}),
        ("bash_close", {"session_id": "never-opened"}, "NO_SUCH_SESSION", {}),
        # (a client that is gone before the set-up is typed, and one still there when
        # it is typed that then ends without a shell: both are unreachable targets)
        ("bash_attach", {"target": "cmd:false"}, "TARGET_UNREACHABLE", {}),
        ("bash_attach", {"target": "cmd:sleep 2"}, "TARGET_UNREACHABLE", {}),
        ("bash_exec", {"command": ":"}, "SHELL_UNSUPPORTED", {"DSH_MAGICS_SHELL": str(old)}),
        ("bash_exec", {"command": ":"}, "SHELL_EXITED", {"DSH_MAGICS_SHELL": str(dying)}),
    ]


#: The codes no call can produce: BRIDGE_UNAVAILABLE belongs to the harness
#: inspector's Node bridge, which no tool uses; ERROR is an internal error,
#: an exception the tools did not expect (a bug), never an expected outcome.
#: TARGET_LOST is only a group member's per-target code (tests/fanout), never a tool error.
#: NO_SPACE needs a full disk (root, to mount a small one): the tool's answer is
#: checked in tests/reliability/test_disk_full.py.
NOT_FROM_TOOLS = {"BRIDGE_UNAVAILABLE", "TARGET_LOST", "NO_SPACE", tools.INTERNAL_ERROR_CODE}


def test_inspector_call_result(ts_clients: None, server_env: ServerEnv, tmp_path: Path) -> None:
    code, ok = call(server_env, tmp_path, "bash_exec", "command=echo $((6*7))", "wait_ms=30000")
    assert code == 0 and ok["isError"] is False, ok
    assert ok["structuredContent"]["output"] == "42\n"
    assert ok["content"][0]["text"].endswith("\n42")


#: The cases of :func:`fresh_server_cases`, by the code each wants. One test
#: (one Inspector process) each: together they took over pytest's 300 s per
#: test under a loaded run (about 35 s an Inspector process at load 15-20).
FRESH_IDS = [
    "NO_SUCH_JOB",
    "INVALID_ARGUMENT",
    "NO_SUCH_SESSION",
    "TARGET_UNREACHABLE-gone",
    "TARGET_UNREACHABLE-late",
    "SHELL_UNSUPPORTED",
    "SHELL_EXITED",
]


@pytest.mark.parametrize("case", range(len(FRESH_IDS)), ids=FRESH_IDS)
def test_inspector_sees_each_first_call_error(
    ts_clients: None, server_env: ServerEnv, tmp_path: Path, case: int
) -> None:
    """The Inspector exits 5 on a tool error and prints the result. (It
    refuses an unlisted tool itself: UNKNOWN_TOOL, like the errors that need
    state from an earlier call, is checked with the SDK client below.)"""
    cases = fresh_server_cases(tmp_path)
    assert [want for _, _, want, _ in cases] == [i.split("-")[0] for i in FRESH_IDS]
    tool, args, want, extra = cases[case]
    code, data = call(server_env, tmp_path, tool, *(f"{k}={v}" for k, v in args.items()), **extra)
    assert code == 5, (tool, args, data)  # a tool error, not a protocol error (exit 1)
    error = assert_tool_error(data, want)
    if want == "INVALID_ARGUMENT":
        assert error["field"] == "wait_ms"


def test_inspector_sees_a_lost_host(ts_clients: None, server_env: ServerEnv, tmp_path: Path) -> None:
    """The terminal host dies under a waiting call (its terminals live there):
    HOST_UNAVAILABLE to that call, however soon after the job's start it dies
    (CI once saw NO_SUCH_JOB here: mcp/calls.py, lost_under_exec)."""
    code, data = call(
        server_env, tmp_path, "bash_exec", f"command={KILL_HOST}", "wait_ms=60000", server=HOST_SERVER
    )
    assert code == 5, data
    assert "is gone" in assert_tool_error(data, "HOST_UNAVAILABLE")["message"]


def run_ts_client(
    env: ServerEnv, steps: list[tuple[str, dict[str, Any], str | None]], server: list[str], **server_env: str
) -> list[dict[str, Any]]:
    """The steps on one connection of the TS SDK client; each step's result,
    checked: a tool error with the stable code wanted, or a result."""
    payload = json.dumps([{"tool": t, "arguments": a} for t, a, _ in steps])
    proc = subprocess.run(
        [*ts_client_argv(), payload, "--", *server],
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT,
        env={**os.environ, "MCP_TEST_SERVER_ENV": json.dumps(_server_env(env, **server_env))},
        cwd=env.cwd,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(lines) == len(steps), proc.stdout
    for (tool, args, want), line in zip(steps, lines, strict=True):
        assert "protocolError" not in line, (tool, args, line)
        result = line["result"]
        if want is None:
            assert result["isError"] is False, (tool, args, result)
            assert isinstance(result["structuredContent"], dict)
        else:
            assert_tool_error(result, want)
    return [line["result"] for line in lines]


def test_ts_sdk_client_sees_a_lost_host_then_a_fresh_one(ts_clients: None, server_env: ServerEnv) -> None:
    steps: list[tuple[str, dict[str, Any], str | None]] = [
        ("bash_exec", {"command": "X=7", "wait_ms": 30_000}, None),
        ("bash_exec", {"command": KILL_HOST, "wait_ms": 60_000}, "HOST_UNAVAILABLE"),
        ("bash_exec", {"command": "echo x${X}x", "wait_ms": 30_000}, None),
    ]
    results = run_ts_client(server_env, steps, HOST_SERVER)
    assert "is gone" in results[1]["content"][0]["text"]
    fresh = results[2]["structuredContent"]
    assert fresh["output"] == "xx\n" and "terminal host was restarted" in fresh["note"]


#: Many calls on one connection: (tool, arguments, the error code wanted or
#: None); a string "$N.field" is that field of step N's result.
STEPS: list[tuple[str, dict[str, Any], str | None]] = [
    # 0, 1: state kept across calls
    ("bash_exec", {"command": "cd /tmp && X=7", "wait_ms": 30_000}, None),
    ("bash_exec", {"command": "echo $X $PWD", "wait_ms": 30_000}, None),
    # 2..5: a running job, a busy terminal, then its result
    ("bash_exec", {"command": "sleep 0.5; echo slept"}, None),
    ("bash_exec", {"command": "true"}, "SESSION_BUSY"),
    ("bash_wait", {"job_id": "$2.job_id", "timeout_ms": 30_000}, None),
    ("bash_send", {"text": "nobody reads this"}, "NOT_RUNNING"),
    # 6..9: a password prompt is not for an agent
    ("bash_exec", {"command": "read -r -s -p 'Password: ' pw; echo got ${#pw}", "tty": True}, None),
    ("bash_wait", {"job_id": "$6.job_id", "timeout_ms": 30_000}, None),
    ("bash_send", {"text": "hunter2"}, "SECRET_INPUT"),
    ("bash_interrupt", {}, None),
    ("bash_wait", {"job_id": "$6.job_id", "timeout_ms": 30_000}, None),
    # 11..: bad argument types and other refusals
    ("bash_exec", {"command": 123}, "INVALID_ARGUMENT"),
    ("bash_exec", {"command": "true", "wait_ms": "soon"}, "INVALID_ARGUMENT"),
    ("bash_attach", {"recreate": "yes"}, "INVALID_ARGUMENT"),
    ("bash_wait", {"job_id": None}, "INVALID_ARGUMENT"),
    ("bash_read", {"last": 1.5}, "INVALID_ARGUMENT"),
    ("bash_list", {"session_id": ["a"]}, "INVALID_ARGUMENT"),
    ("bash_exec", {"comand": "true"}, "INVALID_ARGUMENT"),
    ("bash_exec", {"command": "true", "session_id": "second"}, "TOO_MANY_SESSIONS"),
    ("bash_wait", {"job_id": "no-such-job"}, "NO_SUCH_JOB"),
    ("bash_close", {"session_id": "never-opened"}, "NO_SUCH_SESSION"),
    ("bash_frobnicate", {}, "UNKNOWN_TOOL"),
    # the terminal is unharmed
    ("bash_exec", {"command": "echo $X", "wait_ms": 30_000}, None),
]


def test_ts_sdk_client_keeps_state_and_sees_tool_errors(
    ts_clients: None, server_env: ServerEnv
) -> None:
    """Many calls on one connection of the TypeScript SDK's Client."""
    results = run_ts_client(server_env, STEPS, SERVER, DSH_MAGICS_MAX_SESSIONS="1")
    check_steps([r.get("structuredContent") for r in results])


def check_steps(out: list[Any]) -> None:
    """What the results of :data:`STEPS` say (beyond each one's code)."""
    assert out[1]["output"] == "7 /tmp\n"
    assert out[4]["output"] == "slept\n" and out[4]["status"] == "completed"
    assert out[7]["awaiting_input"]["secret"] is True and out[7]["status"] == "running"
    assert out[9]["interrupted"] is True and out[10]["status"] == "interrupted"
    assert out[-1]["output"] == "7\n"


def test_every_stable_code_is_covered(tmp_path: Path) -> None:
    """Each code of the tools' error schema is produced by a case here, or
    said to be impossible (:data:`NOT_FROM_TOOLS`)."""
    produced = {want for _, _, want in STEPS if want} | {"HOST_UNAVAILABLE"}
    produced |= {want for _, _, want, _ in fresh_server_cases(tmp_path)}
    assert produced | NOT_FROM_TOOLS == {*ERROR_CODES, tools.INTERNAL_ERROR_CODE}


# -- the same calls with the Python SDK's client ------------------------------
def _fill(value: Any, results: list[Any]) -> Any:
    if isinstance(value, str):
        m = re.fullmatch(r"\$(\d+)\.(\w+)", value)
        return (results[int(m.group(1))] or {}).get(m.group(2)) if m else value
    if isinstance(value, dict):
        return {k: _fill(v, results) for k, v in value.items()}
    return value


async def run_python_sdk(
    env: ServerEnv, steps: list[tuple[str, dict[str, Any], str | None]], *args: str, **extra: str
) -> list[Any]:
    """The steps on one connection of the Python SDK's client, each checked
    as :func:`run_ts_client` does; the structured results."""
    out: list[Any] = []
    async with mcp_server(env, *args, client="python sdk test", extra_env=extra) as m:
        for tool, arguments, want in steps:
            arguments = _fill(arguments, out)
            if want is None:
                out.append(await m.ok(tool, arguments))
            else:
                await m.err(tool, arguments, want)
                out.append(None)
    return out


@pytest.mark.anyio
async def test_python_sdk_client_keeps_state_and_sees_tool_errors(server_env: ServerEnv) -> None:
    check_steps(await run_python_sdk(server_env, STEPS, "--in-process", DSH_MAGICS_MAX_SESSIONS="1"))


@pytest.mark.anyio
async def test_python_sdk_client_sees_every_first_call_error(server_env: ServerEnv, tmp_path: Path) -> None:
    for tool, args, want, extra in fresh_server_cases(tmp_path):
        await run_python_sdk(server_env, [(tool, args, want)], "--in-process", **extra)
