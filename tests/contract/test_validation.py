"""One wording per bad argument, whoever receives it: the engine (either
backend) and the agent tools over it say the same thing; the tools only
prefix the argument's name."""

from __future__ import annotations

from typing import Any

import pytest

from dsh_magics.errors import InvalidArgument
from dsh_magics.terminal import Engine
from dsh_magics.tools import call


@pytest.mark.parametrize(
    ("tool", "args", "engine_call", "field"),
    [
        ("bash_exec", {"session_id": "v", "command": ""}, lambda e: e.exec("v", ""), "command"),
        ("bash_exec", {"session_id": "v", "command": " \t\n"}, lambda e: e.exec("v", " \t\n"), "command"),
        ("bash_exec", {"session_id": "a/b", "command": "true"}, lambda e: e.exec("a/b", "true"), "session_id"),
        ("bash_exec", {"session_id": "", "command": "true"}, lambda e: e.exec("", "true"), "session_id"),
        ("bash_read", {"session_id": " v"}, lambda e: e.read(" v"), "session_id"),
        ("bash_wait", {"job_id": ""}, lambda e: e.wait(""), "job_id"),
        ("bash_attach", {"session_id": "v", "cwd": ""}, lambda e: e.attach("v", cwd=""), "cwd"),
    ],
)
def test_tools_and_engine_share_the_wording(
    engine: Engine, tool: str, args: dict[str, Any], engine_call: Any, field: str
) -> None:
    with pytest.raises(InvalidArgument) as direct:
        engine_call(engine)
    out = call(tool, args, registry=engine)
    assert out["error"]["code"] == "INVALID_ARGUMENT"
    assert out["error"]["field"] == field
    assert out["error"]["message"] == f"{field}: {direct.value.message}"
    assert direct.value.details.get("field") == field
    assert engine.list() == []


def test_every_error_class_has_a_listed_stable_code() -> None:
    from dsh_magics import errors

    classes: list[type[errors.DshError]] = []
    stack = [errors.DshError]
    while stack:
        cls = stack.pop()
        classes.extend(cls.__subclasses__())
        stack.extend(cls.__subclasses__())
    codes = [c.code for c in classes if c.__module__ == errors.__name__]
    assert sorted(codes) == sorted(errors.ERROR_CODES)
    assert len(set(codes)) == len(codes)
