"""The tool schemas: shape, provider formats, bounds, and descriptions that
explain every result field."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from dsh_magics import tools
from dsh_magics.tools.schemas import SPECS


def test_tools_in_order() -> None:
    assert tools.TOOL_NAMES == (
        "bash_attach",
        "bash_exec",
        "bash_wait",
        "bash_read",
        "bash_interrupt",
        "bash_close",
        "bash_list",
        "bash_send",
        "bash_screen",
    )
    assert [s["name"] for s in tools.schemas()] == list(tools.TOOL_NAMES)
    assert tools.schemas() == tools.schemas("plain")


@pytest.mark.parametrize("spec", tools.schemas(), ids=lambda s: s["name"])
def test_parameters_are_strict_objects(spec: dict) -> None:
    params = spec["parameters"]
    assert set(spec) == {"name", "description", "parameters"}
    assert params["type"] == "object" and params["additionalProperties"] is False
    assert isinstance(params["required"], list)
    assert set(params["required"]) <= set(params["properties"])
    assert "session_id" in params["properties"] and "session_id" not in params["required"]
    for name, prop in params["properties"].items():
        assert prop["type"] in ("string", "integer", "boolean", "array"), name
        if prop["type"] == "array":  # lists of names (bash_send keys)
            assert prop["items"] == {"type": "string"}, name
        assert len(prop["description"]) > 20, name
    jsonschema.Draft202012Validator.check_schema(params)


def test_required_parameters() -> None:
    required = {s["name"]: s["parameters"]["required"] for s in tools.schemas()}
    assert required == {
        "bash_attach": [],
        "bash_exec": ["command"],
        "bash_wait": ["job_id"],
        "bash_read": [],
        "bash_interrupt": [],
        "bash_close": [],
        "bash_list": [],
        "bash_send": [],
        "bash_screen": [],
    }


def test_integer_bounds_are_enforced_and_stated() -> None:
    for name in tools.TOOL_NAMES:
        bounded = tools.validation_schema(name)
        model = next(s for s in tools.schemas() if s["name"] == name)["parameters"]
        for pname, prop in bounded["properties"].items():
            if prop["type"] == "integer":
                assert "minimum" in prop and "maximum" in prop, (name, pname)
                text = model["properties"][pname]["description"]
                assert f"{prop['minimum']} to {prop['maximum']}" in text, (name, pname)
            if prop["type"] == "string":
                assert prop["minLength"] == 1 and "maxLength" in prop, (name, pname)
    waits = [
        tools.validation_schema("bash_exec")["properties"]["wait_ms"],
        tools.validation_schema("bash_wait")["properties"]["timeout_ms"],
    ]
    assert all(w["minimum"] == 0 and w["maximum"] == tools.MAX_WAIT_MS for w in waits)


def test_bounds_option_matches_what_call_enforces() -> None:
    bounded = {s["name"]: s["parameters"] for s in tools.schemas(bounds=True)}
    assert bounded == {n: tools.validation_schema(n) for n in tools.TOOL_NAMES}
    for spec in tools.schemas():  # the default carries no bound keywords
        for prop in spec["parameters"]["properties"].values():
            assert set(prop) - {"enum", "items"} == {"type", "description"}


def test_openai_format() -> None:
    plain = tools.schemas()
    openai = tools.schemas(format="openai")
    assert [o["type"] for o in openai] == ["function"] * len(tools.TOOL_NAMES)
    assert [o["function"] for o in openai] == plain


def test_anthropic_format() -> None:
    plain = tools.schemas()
    anthropic = tools.schemas(format="anthropic")
    assert anthropic == [
        {"name": p["name"], "description": p["description"], "input_schema": p["parameters"]}
        for p in plain
    ]


def test_schemas_are_fresh_copies() -> None:
    first = tools.schemas()
    first[0]["parameters"]["properties"].clear()
    assert tools.schemas()[0]["parameters"]["properties"]
    json.dumps(tools.schemas("openai"))


def test_unknown_format_is_refused() -> None:
    with pytest.raises(ValueError, match="openai"):
        tools.schemas(format="gemini")


def _field_names(schema: dict) -> set[str]:
    names: set[str] = set()
    for branch in schema.get("oneOf", [schema]):
        for key, prop in branch.get("properties", {}).items():
            names.add(key)
            if prop.get("type") == "array" and "properties" in prop.get("items", {}):
                names |= set(prop["items"]["properties"])
    return names


@pytest.mark.parametrize("name", tools.TOOL_NAMES)
def test_descriptions_explain_every_result_field(name: str) -> None:
    description = SPECS[name].description
    if "same fields as bash_wait" in description:
        description += SPECS["bash_wait"].description
    for field in _field_names(tools.OUTPUT_SCHEMAS[name]):
        assert re.search(rf"\b{field}\b", description), f"{name} does not explain {field}"


def test_output_schemas_are_valid_and_cover_errors() -> None:
    for name in tools.TOOL_NAMES:
        jsonschema.Draft202012Validator.check_schema(tools.output_schema(name))
    validator = jsonschema.Draft202012Validator(tools.output_schema("bash_list"))
    assert validator.is_valid({"error": {"code": "NO_SUCH_SESSION", "message": "m"}})
    assert not validator.is_valid({"error": {"code": "MADE_UP", "message": "m"}})
    assert not validator.is_valid({"terminals": [], "own_session": None, "extra": 1})
