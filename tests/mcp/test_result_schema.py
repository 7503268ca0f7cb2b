"""The result schemas served over MCP accept exactly what tools.OUTPUT_SCHEMAS accepts."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from dsh_magics import tools
from dsh_magics.mcp.result_schema import cheaper, output_schema
from dsh_magics.terminal import Registry

from ..conftest import wait_until


@pytest.fixture(scope="module")
def corpus() -> Iterator[list[tuple[str, dict[str, Any]]]]:
    """Real results of every tool, from a real terminal."""
    reg = Registry()
    out: list[tuple[str, dict[str, Any]]] = []

    def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
        res = tools.call(name, args, caller_session="schema", registry=reg)
        assert "error" not in res, res
        out.append((name, res))
        return res

    try:
        call("bash_attach", {})
        call("bash_exec", {"command": "echo hi; cd /tmp", "wait_ms": 30_000})
        call("bash_exec", {"command": "exit 3", "wait_ms": 30_000})
        started = call("bash_exec", {"command": "read -r -s -p 'pw: ' x; echo ${#x}", "tty": True})
        wait_until(lambda: reg.info("schema").awaiting_input is not None, 30)
        call("bash_wait", {"job_id": started["job_id"], "timeout_ms": 30_000})
        call("bash_list", {})
        call("bash_send", {"key": "ctrl-c"})
        call("bash_wait", {"job_id": started["job_id"], "timeout_ms": 30_000, "on_input": False})
        call("bash_read", {"last": 5})
        call("bash_screen", {})
        call("bash_screen", {"marks": True})
        call("bash_interrupt", {})
        call("bash_close", {})
        yield out
    finally:
        reg.close_all()


def variants(result: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The result, and broken copies of it."""
    yield result
    for key, value in result.items():
        missing = dict(result)
        del missing[key]
        yield missing
        for wrong in (None, "x", 1, 1.5, True, [], {}):
            if wrong != value or type(wrong) is not type(value):
                yield {**result, key: wrong}
    yield {**result, "unexpected": 1}
    yield {"job_id": "j", "session_id": "s", "status": "running", "exit_code": 0}


def test_both_forms_agree_on_real_and_broken_results(corpus: list[tuple[str, dict[str, Any]]]) -> None:
    seen = set()
    for name, result in corpus:
        seen.add(name)
        original = Draft202012Validator(tools.OUTPUT_SCHEMAS[name])
        served = output_schema(name)
        assert served is not None
        fast = Draft202012Validator(served)
        Draft202012Validator.check_schema(served)
        assert fast.is_valid(result)
        for v in variants(result):
            assert original.is_valid(v) == fast.is_valid(v), (name, v)
    assert seen == set(tools.TOOL_NAMES)


def test_the_rewrites() -> None:
    nullable = {"oneOf": [{"type": "integer"}, {"type": "null"}]}
    assert cheaper(nullable) == {"type": ["integer", "null"]}
    a = {"type": "object", "properties": {"x": {}}, "required": ["x"], "additionalProperties": False}
    b = {"type": "object", "properties": {"x": {}, "y": {}}, "required": ["x", "y"], "additionalProperties": False}
    assert cheaper({"oneOf": [a, b]}) == {"anyOf": [b, a]}  # the most required first
    # not provably exclusive: stays oneOf
    open_b = {**b, "additionalProperties": True}
    assert "oneOf" in cheaper({"oneOf": [a, open_b]})
    c = {"type": "object", "properties": {"x": {}, "y": {}}, "required": ["x"], "additionalProperties": False}
    assert "oneOf" in cheaper({"oneOf": [a, c]})
    # a nullable with more keywords keeps its oneOf
    kept = {"oneOf": [{"type": "integer", "minimum": 0}, {"type": "null"}]}
    assert cheaper(copy.deepcopy(kept)) == kept
