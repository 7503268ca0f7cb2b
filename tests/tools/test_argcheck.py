"""dsh_magics.tools.argcheck against jsonschema: the same violations, on every tool's schema."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dsh_magics import tools
from dsh_magics.tools.argcheck import Checker

_ORACLES = {n: jsonschema.Draft202012Validator(tools.validation_schema(n)) for n in tools.TOOL_NAMES}
_OURS = {n: Checker(tools.validation_schema(n)) for n in tools.TOOL_NAMES}

#: Values around every kind of check the tool schemas make.
_VALUES: list[Any] = [
    None, True, False, 0, 1, -1, 5.0, 5.5, -0.0, 2**70, float("inf"), 600000, 600001,
    "", "x", "enter", "ctrl-c", "f13", "a/b", "x" * 199, "x" * 200, "x" * 201, "é" * 200,
    [], ["enter"], ["x"] * 200, ["x"] * 201, [1], ["a", None], {}, {"a": 1},
]


def _found(name: str, arguments: Any) -> tuple[Counter[Any], Counter[Any]]:
    theirs = Counter(
        (tuple(e.path), e.validator) for e in _ORACLES[name].iter_errors(arguments)
    )
    ours = Counter((v.path, v.keyword) for v in _OURS[name].violations(arguments))
    return theirs, ours


@pytest.mark.parametrize("name", tools.TOOL_NAMES)
def test_every_property_and_value_gives_the_same_violations(name: str) -> None:
    props = list(tools.validation_schema(name)["properties"])
    for prop in props:
        for value in _VALUES:
            theirs, ours = _found(name, {prop: value})
            assert ours == theirs, (name, prop, value)


@pytest.mark.parametrize("name", tools.TOOL_NAMES)
def test_missing_and_unknown_arguments_give_the_same_violations(name: str) -> None:
    for arguments in ({}, {"nope": 1}, {"nope": 1, "other": 2}, {"": None}):
        theirs, ours = _found(name, arguments)
        assert ours == theirs, (name, arguments)


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None)
@given(
    name=st.sampled_from(tools.TOOL_NAMES),
    picks=st.lists(st.tuples(st.integers(0, 20), _json | st.sampled_from(_VALUES)), max_size=5),
)
def test_random_arguments_give_the_same_violations(name: str, picks: list[tuple[int, Any]]) -> None:
    props = list(tools.validation_schema(name)["properties"]) + ["extra"]
    arguments = {props[i % len(props)]: v for i, v in picks}
    theirs, ours = _found(name, arguments)
    assert ours == theirs, (name, arguments)


def test_a_keyword_it_does_not_know_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match="pattern"):
        Checker({"type": "object", "properties": {"a": {"type": "string", "pattern": "x"}}})
    with pytest.raises(ValueError, match="additionalProperties"):
        Checker({"type": "object", "additionalProperties": {"type": "string"}})


def test_the_tools_and_the_mcp_server_start_without_jsonschema_or_the_emulator() -> None:
    """Importing jsonschema costs over a second where rfc3987-syntax is
    installed, the emulator's binding 0.15-0.35 s, and none of these needs
    them before a terminal starts here (benchmarks/README.md, bench_startup.py)."""
    code = (
        "import sys, dsh_magics.tools, dsh_magics.mcp.server, dsh_magics.notebook.magics, dsh_magics.host;"
        "print(sorted(m for m in ('jsonschema', 'rfc3987_syntax', 'pyghostty') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
