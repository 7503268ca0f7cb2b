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


@pytest.mark.parametrize(
    ("engine_call", "field", "message"),
    [
        (lambda e: e.wait("bash-x", until="(unclosed"), "until", "until is not a valid regular expression"),
        (lambda e: e.wait("bash-x", until=""), "until", "until must be a non-empty regular expression"),
        (lambda e: e.wait("bash-x", until="a" * 1001), "until", "until is 1001 characters long; the limit is 1000"),
        (lambda e: e.wait("bash-x", idle_ms=0), "idle_ms", "idle_ms must be an integer number of milliseconds >= 1"),
        (lambda e: e.wait("bash-x", on_input="yes"), "on_input", "on_input must be true or false"),
        (lambda e: e.send("v", "x", source="robot"), "source", "source must be one of person, agent"),
        (lambda e: e.send("v", "x", source=None), "source", "source must be one of person, agent"),
        (lambda e: e.send("v", "x", caller=5), "caller", "caller must be a session id (a string)"),
        (lambda e: e.send("v", "x", secret=None), "secret", "secret must be true or false"),
        (lambda e: e.send("v", "x", allow_secret="no"), "allow_secret", "allow_secret must be true or false"),
        (lambda e: e.send("v", 5), "text", "text must be a string"),
        (lambda e: e.attach("v", target=5), "target", "target must be a string"),
        (lambda e: e.exec("v", b"true"), "command", "command must be a string"),
        (lambda e: e.read("v", since=-1), "since", "since must be an integer >= 0"),
        (lambda e: e.read("v", last=1.5), "last", "last must be an integer >= 0"),
    ],
)
def test_every_entry_checks_before_the_engine_acts(engine: Engine, engine_call: Any, field: str, message: str) -> None:
    """The engine's internals trust their input, so each public entry checks
    it first, with the one wording of terminal/validation.py, and nothing
    is opened on the way."""
    with pytest.raises(InvalidArgument) as e:
        engine_call(engine)
    assert e.value.message.startswith(message), e.value.message
    assert e.value.details.get("field") == field
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
