"""Fixtures for the agent-tool tests: a real registry per module, and an
``Agent`` that makes tool calls only and checks every result it gets back
against the published output schemas (so every result the suite produces is
validated, not a sample)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections import Counter
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from dsh_magics import tools
from dsh_magics.terminal import Registry
from tests.conftest import pids_with_env, wait_until

#: How many results were validated, per tool; the loop test checks coverage.
VALIDATED: Counter[str] = Counter()

_VALIDATORS = {
    name: jsonschema.Draft202012Validator(tools.output_schema(name)) for name in tools.TOOL_NAMES
}
_ERROR_VALIDATOR = jsonschema.Draft202012Validator(tools.ERROR_RESULT)


def check_result(name: str, result: Any) -> dict[str, Any]:
    """A tool result must be strict JSON and match its tool's output schema."""
    assert isinstance(result, dict), result
    json.dumps(result, allow_nan=False)
    validator = _VALIDATORS.get(name, _ERROR_VALIDATOR)
    errors = list(validator.iter_errors(result))
    assert not errors, (
        f"{name} result does not match its output schema: {errors[0].message}\n{result}"
    )
    VALIDATED[name if name in _VALIDATORS else "<error>"] += 1
    return result


class Agent:
    """Drives terminals with tool calls only, like a model would."""

    def __init__(self, registry: Registry, session: str | None) -> None:
        self.registry = registry
        self.session = session

    def __call__(self, name: str, arguments: Any = None, **kw: Any) -> dict[str, Any]:
        kw.setdefault("caller_session", self.session)
        result = tools.call(name, arguments, registry=self.registry, **kw)
        return check_result(name, result)

    def ok(self, name: str, arguments: Any = None, **kw: Any) -> dict[str, Any]:
        result = self(name, arguments, **kw)
        assert "error" not in result, result
        return result

    def err(self, name: str, arguments: Any, code: str, **kw: Any) -> dict[str, Any]:
        result = self(name, arguments, **kw)
        assert "error" in result and result["error"]["code"] == code, result
        return result["error"]

    def started(self, marker: str, session: str | None = None) -> dict[str, Any]:
        """Wait until the terminal shows ``marker`` (the command is running).

        Interrupting before the command has started is an engine gap (see
        test_engine_gaps.py), so tests that press Ctrl-C wait for this first.
        """
        args = {"last": 20} if session is None else {"last": 20, "session_id": session}
        return wait_until(
            lambda: marker in (r := self.ok("bash_read", args))["text"] and r,
            10,
            msg=f"{marker!r} shown",
        )

    def run(self, command: str, session: str | None = None) -> dict[str, Any]:
        """Run a short command to completion and return its result."""
        args: dict[str, Any] = {"command": command, "wait_ms": 20_000}
        if session is not None:
            args["session_id"] = session
        res = self.ok("bash_exec", args)
        assert "exit_code" in res, f"{command!r} did not finish: {res}"
        return res


def pids_with_session_env(prefix: str) -> list[int]:
    """Live processes whose DSH_MAGICS_SESSION starts with ``prefix``."""
    return pids_with_env("DSH_MAGICS_SESSION", prefix, prefix=True)


def live_by_ps(pids: list[int]) -> list[int]:
    """Those of ``pids`` that ``ps`` still lists as live (zombies excluded)."""
    if not pids:
        return []
    out = subprocess.run(
        ["ps", "-o", "pid=,stat=", "-p", ",".join(map(str, pids))], capture_output=True, text=True
    ).stdout
    return [int(p) for p, st in (ln.split() for ln in out.splitlines()) if not st.startswith("Z")]


def closed_cleanly(registry: Registry, prefix: str) -> None:
    """Close every terminal and prove, with ps and /proc, that nothing of ours
    is left: neither the shells nor anything carrying our sessions' env."""
    shells = [t.pid for t in registry.list() if t.pid]
    registry.close_all()
    wait_until(lambda: not live_by_ps(shells), 10, msg=f"shells {shells} exit")
    wait_until(
        lambda: not pids_with_session_env(prefix), 10, msg=f"processes of sessions {prefix}* exit"
    )


@pytest.fixture(scope="module")
def prefix(request: pytest.FixtureRequest) -> str:
    """Session ids of this module start with this (unique per run and module)."""
    return f"tt{os.getpid()}-{request.module.__name__.rsplit('.', 1)[-1][5:15]}-"


@pytest.fixture(scope="module")
def registry(prefix: str) -> Iterator[Registry]:
    reg = Registry(login=False)
    yield reg
    closed_cleanly(reg, prefix)


@pytest.fixture
def agent(registry: Registry, prefix: str, request: pytest.FixtureRequest) -> Iterator[Agent]:
    """An agent whose own session is unique to the test; its terminals are
    closed afterwards so tests do not see each other's shells."""
    me = prefix + re.sub(r"[^A-Za-z0-9_.-]", "-", request.node.name)[:60]
    a = Agent(registry, me)
    yield a
    for info in registry.list():
        if info.session_id.startswith(me):
            registry.close(info.session_id)
