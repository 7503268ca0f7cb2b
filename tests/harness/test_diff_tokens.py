"""Diffs between configurations/sources, and the token estimator."""

from __future__ import annotations

import json

import pytest

from dsh_magics.harness import Config, diff, estimate_tokens, schema, tool_size
from dsh_magics.harness.live import tool_from_json
from dsh_magics.harness.tokens import compact_json, exact_size


@pytest.mark.parametrize(
    "text,expected",
    [
        ("", 0),
        ("hello", 1),
        ("hello world", 2),  # a single space before a word is free
        ("abcdefghijklm", 3),  # 13 letters: 1 + 12 // 6
        ("12345", 2),  # ceil(5 / 3)
        ("a.b", 3),  # punctuation costs one each
        ("x\ny", 3),  # a newline is not a single space: it costs one
        ("a  b", 3),  # neither is a double space
        ("a .", 3),  # a space before punctuation costs one
        ("é", 1),  # non-ASCII characters cost one each
        ("trailing ", 3),  # 8 letters cost 2, a trailing space 1
    ],
)
def test_estimator_rules(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


def test_estimator_is_near_four_chars_per_token_on_prose() -> None:
    prose = (
        "The inspector compares the schema a model sees under each configuration, so that "
        "a reader can tell which sentences and parameters a deployment adds or removes."
    )
    ratio = len(prose) / estimate_tokens(prose)
    assert 3.0 < ratio < 6.0


def test_exact_size_is_compact_json_length_and_additive_tokens() -> None:
    raw = {
        "name": "demo",
        "description": "Our own words for a demo tool.",
        "parameters": {
            "type": "object",
            "properties": {"x": {"type": "string", "description": 'An "x" → value.'}},
            "required": ["x"],
        },
    }
    tool = tool_from_json(raw, package="demo")
    chars, tokens = tool_size(tool)
    assert chars == len(compact_json(raw)) == exact_size(raw)[0]
    skeleton = compact_json(
        {
            "name": "demo",
            "description": "",
            "parameters": {
                **raw["parameters"],
                "properties": {"x": {"type": "string", "description": ""}},
            },
        }
    )
    assert tokens == estimate_tokens(skeleton) + estimate_tokens(
        raw["description"]
    ) + estimate_tokens('An "x" → value.')
    # the model-side formula (skeleton + stored per-text facts) gives the same numbers
    assert tool.description_facts is not None and tool.params[0].text is not None
    model_chars = (
        len(skeleton) + tool.description_facts.json_length + tool.params[0].text.json_length
    )
    assert model_chars == chars


def test_diff_adds_escalation_fields_and_fragment() -> None:
    a, b = Config(), Config(sandbox="read-only")
    d = diff(a, b)
    assert [p.name for p in d.added] == ["sandbox_permissions", "justification"]
    assert d.removed == () and d.changed == ()
    assert d.fragments_added == ("escalation",) and d.fragments_removed == ()
    ca, ta = tool_size(schema(a).bash)
    cb, tb = tool_size(schema(b).bash)
    assert (d.chars_a, d.chars_b, d.tokens_a, d.tokens_b) == (ca, cb, ta, tb)
    assert d.chars_delta == cb - ca > 1000  # the escalation paragraph is the bulk
    assert d.tokens_delta is not None and d.tokens_delta > 0
    assert json.loads(json.dumps(d.to_dict()))["chars_delta"] == d.chars_delta


def test_diff_reports_position_changes() -> None:
    d = diff(Config(sandbox="read-only"), Config(sandbox="read-only", background=False))
    assert [p.name for p in d.removed] == ["run_in_background"]
    assert {(c.name, c.facet, c.before, c.after) for c in d.changed} == {
        ("sandbox_permissions", "position", 5, 4),
        ("justification", "position", 6, 5),
    }
    assert d.fragments_added == ("background-off",) and d.fragments_removed == ("background-on",)


def test_same_schema_different_modes_has_no_diff() -> None:
    d = diff(Config(sandbox="read-only"), Config(sandbox="danger-full-access"))
    assert d.structurally_equal and d.chars_delta == 0 and d.tokens_delta == 0


def test_diff_across_eras_lists_tools_and_unknown_sizes() -> None:
    d = diff(Config(era="2026-07-15"), Config())
    assert d.tools_added == ("job_kill", "job_list", "job_output")
    assert d.tools_removed == ("task_kill", "task_list", "task_output")
    # the task era's sizes are measured (published 0.0.1-rc.1): 1810 -> 1804 chars
    assert (d.chars_a, d.chars_b, d.chars_delta) == (1810, 1804, -6)
    d1 = diff(Config(era="2026-07-11"), Config())
    assert d1.chars_a is None and d1.chars_delta is None
    d2 = diff(Config(era="rfc-foreground-only"), Config(era="2026-06-12"))
    assert [p.name for p in d2.added] == ["run_in_background"]
    assert d2.tools_added == ("bash_kill", "bash_output")
    assert d2.fragments_added == ("background-on",)


def test_diff_of_another_tool() -> None:
    d = diff(Config(), Config(), tool="job_output")
    assert d.structurally_equal and d.chars_delta == 0
