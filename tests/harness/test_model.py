"""The offline structural model states the facts faithfully."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from dsh_magics.errors import InvalidArgument
from dsh_magics.harness import (
    ERAS,
    ESCALATION_TARGETS,
    SANDBOX_MODES,
    SUMMARY_LABEL,
    Config,
    PluginLoadError,
    era_info,
    matrix,
    preset,
    presets,
    schema,
    text_facts,
    tool_size,
)

ALL_COMBOS = [(bg, mode) for bg in (True, False) for mode in SANDBOX_MODES]


def test_eight_combinations_give_exactly_four_schemas() -> None:
    structures = {
        json.dumps(schema(Config(background=bg, sandbox=mode)).bash.structure())
        for bg, mode in ALL_COMBOS
    }
    assert len(structures) == 4
    m = matrix()
    assert len(m.rows) == 8 and m.distinct == 4
    assert {r.variant for r in m.rows} == {"A", "B", "C", "D"}


@pytest.mark.parametrize("bg,mode", ALL_COMBOS)
def test_parameters_follow_the_conditions(bg: bool, mode: str | None) -> None:
    bash = schema(Config(background=bg, sandbox=mode)).bash
    expected = ["command", "description", "timeoutMs", "workdir"]
    if bg:
        expected.append("run_in_background")
    if mode is not None:  # any reported mode, danger-full-access included
        expected += ["sandbox_permissions", "justification"]
    assert list(bash.param_names) == expected
    assert [p.position for p in bash.params] == list(range(len(expected)))
    assert bash.parameters["required"] == ["command", "description"]
    assert [p.name for p in bash.params if p.required] == ["command", "description"]
    types = {p.name: p.type for p in bash.params}
    assert types["timeoutMs"] == "number" and types["command"] == "string"
    if bg:
        assert types["run_in_background"] == "boolean"


@pytest.mark.parametrize("mode", ["read-only", "workspace-write", "danger-full-access"])
def test_enum_is_never_narrowed_by_the_mode(mode: str) -> None:
    p = schema(Config(sandbox=mode)).bash.param("sandbox_permissions")  # type: ignore[arg-type]
    assert p.enum == ESCALATION_TARGETS == ("workspace-write", "danger-full-access")


def test_json_structure_has_the_compiler_key_order() -> None:
    params = schema(Config(sandbox="read-only")).bash.parameters
    assert list(params) == ["type", "properties", "required"]
    assert list(params["properties"]["sandbox_permissions"]) == ["type", "description", "enum"]
    assert list(params["properties"]["command"]) == ["type", "description"]
    jobs = schema(Config()).tool("job_list").parameters
    assert jobs == {"type": "object", "properties": {}}  # no "required" when nothing is required


def test_set_mode_without_policy_is_a_load_error() -> None:
    with pytest.raises(PluginLoadError) as exc:
        schema(Config(sandbox="workspace-write", sandbox_policy=False))
    assert exc.value.code == "PLUGIN_LOAD_ERROR"
    # No mode: the policy is never consulted, so its absence is fine.
    assert schema(Config(sandbox=None, sandbox_policy=False)).variant == "A"


def test_fragments_per_variant() -> None:
    keys = {
        (bg, mode is not None): [
            f.key for f in schema(Config(background=bg, sandbox=mode)).bash.fragments
        ]
        for bg, mode in ALL_COMBOS
    }
    assert keys[(True, False)] == ["base", "background-on"]
    assert keys[(True, True)] == ["base", "background-on", "escalation"]
    assert keys[(False, False)] == ["base", "background-off"]
    assert keys[(False, True)] == ["base", "background-off", "escalation"]


def test_model_sizes_add_up_to_the_known_description_lengths() -> None:
    for (bg, confined), letter in {
        (True, False): "A",
        (True, True): "B",
        (False, False): "C",
        (False, True): "D",
    }.items():
        bash = schema(Config(background=bg, sandbox="read-only" if confined else None)).bash
        assert (
            sum(f.facts.length for f in bash.fragments if f.facts)
            == text_facts.VARIANTS[letter].length
        )
        assert bash.description_facts == text_facts.VARIANTS[letter]
    # the reference's four description lengths
    assert [text_facts.VARIANTS[v].length for v in "ABCD"] == [825, 1836, 759, 1770]


def test_every_model_text_is_a_labelled_summary_and_no_harness_text() -> None:
    known_hashes = {f.sha256 for f in text_facts.FRAGMENTS.values()}
    known_hashes |= {f.sha256 for f in text_facts.BASH_PARAMS.values()}
    known_hashes |= {f.sha256 for f in text_facts.VARIANTS.values()}
    for era in ERAS:
        view = schema(Config(era=era, sandbox="read-only" if era_info(era).escalation else None))
        for tool in view.tools + view.related:
            assert tool.description.startswith(SUMMARY_LABEL) and tool.description_is_summary
            for p in tool.params:
                assert p.description is not None and p.description.startswith(SUMMARY_LABEL)
                assert p.description_is_summary
                assert hashlib.sha256(p.description.encode()).hexdigest() not in known_hashes
            for node in tool.parameters["properties"].values():
                assert node["description"].startswith(SUMMARY_LABEL)
        for f in view.bash.fragments:
            assert f.text is None and f.summary and "\n" not in f.summary


def test_related_tools() -> None:
    view = schema(Config(sandbox="read-only"))
    related = {(t.name, t.package.split(" ")[0]) for t in view.related}
    assert ("bash", "@deepseek-ai/dsh-tool-bash-persistent") in related
    assert ("pwsh", "@deepseek-ai/dsh-tool-pwsh") in related
    persistent = next(t for t in view.related if t.name == "bash")
    assert persistent.param_names == ("command",) and persistent.parameters["required"] == [
        "command"
    ]
    pwsh = next(t for t in view.related if t.name == "pwsh")
    assert [(p.name, p.type, p.enum, p.required) for p in pwsh.params] == [
        (p.name, p.type, p.enum, p.required) for p in view.bash.params
    ]


ERA_TOOLS = {
    "2026-06-12": ("bash", "bash_kill", "bash_output"),
    "2026-07-11": ("bash", "bash_kill", "bash_output"),
    "2026-07-15": ("bash", "task_kill", "task_list", "task_output"),
    "2026-08-13": ("bash", "job_kill", "job_list", "job_output"),
    "rfc-foreground-only": ("bash",),
}


@pytest.mark.parametrize("era", ERAS)
def test_eras_tool_sets_and_applicability(era: str) -> None:
    view = schema(Config(era=era, background=False, sandbox="read-only"))
    assert view.tool_names == ERA_TOOLS[era]
    inputs = {i.name: i for i in view.inputs}
    info = era_info(era)
    assert inputs["enable_run_in_background"].applicable == info.background_toggle
    assert inputs["sandbox"].applicable == info.escalation
    for i in view.inputs:
        if not i.applicable and i.name != "sandbox_policy":
            # reported, not silently dropped
            assert any(n.startswith(f"{i.name}=") for n in view.notes)
    names = view.bash.param_names
    if era == "rfc-foreground-only":
        assert names == ("command", "description", "timeoutMs", "workdir")
    elif era in ("2026-06-12", "2026-07-11"):
        assert "run_in_background" in names  # background off is not applicable: still offered
    else:
        assert "run_in_background" not in names
    assert ("sandbox_permissions" in names) == info.escalation
    assert (view.variant is not None) == (info.published is not None)


def test_era_matrices() -> None:
    assert matrix(era="2026-06-12").distinct == 1 and len(matrix(era="2026-06-12").rows) == 1
    m = matrix(era="2026-07-11")
    assert len(m.rows) == 4 and m.distinct == 2
    assert [i.name for i in m.inputs] == ["enable_run_in_background"]
    assert matrix(era="2026-07-15").distinct == 4


def test_old_era_sizes_are_unknown_not_guessed() -> None:
    for era in ("2026-06-12", "2026-07-11", "rfc-foreground-only"):
        assert tool_size(schema(Config(era=era)).bash) == (None, None)
    # the task era has a published package: its sizes are measured facts
    view = schema(Config(era="2026-07-15"))
    assert view.variant == "A" and tool_size(view.bash) == (1810, 603)
    assert view.bash.description_is_summary  # still our wording, only numbers carried over


def test_era_rows_say_where_texts_come_from() -> None:
    texts = {e: era_info(e).texts for e in ERAS}
    assert texts == {
        "2026-06-12": "modelled",
        "2026-07-11": "modelled",
        "2026-07-15": "live (0.0.1-rc.1)",
        "2026-08-13": "live (0.1.0-rc.8)",
        "rfc-foreground-only": "modelled",
    }


def test_bad_inputs_are_clear_errors() -> None:
    with pytest.raises(InvalidArgument, match="unknown era"):
        schema(Config(era="1999-01-01"))
    with pytest.raises(InvalidArgument, match="unknown sandbox mode"):
        schema(Config(sandbox="full"))  # type: ignore[arg-type]
    with pytest.raises(InvalidArgument, match="unknown source"):
        schema(Config(), source="guess")


def test_presets() -> None:
    p = presets(env={})
    assert set(p) == {"catalog-default", "dsh-base", "package-default"}
    assert p["catalog-default"].config == Config(background=True, sandbox=None)
    assert schema(p["catalog-default"].config).variant == "A"
    assert p["dsh-base"].config.sandbox == "workspace-write" and p["dsh-base"].policy == "ask"
    assert schema(p["dsh-base"].config).variant == "B"
    assert p["package-default"].config.sandbox == "read-only"
    full = preset("dsh-base", env={"DSH_PERMISSION_MODE": "danger-full-access"})
    assert full.policy == "never" and full.config.sandbox == "danger-full-access"
    assert schema(full.config).variant == "B"  # still advertised, nothing is wider
    assert preset("dsh-base", env={"DSH_PERMISSION_MODE": "read-only"}).policy == "ask"
    with pytest.raises(InvalidArgument, match="DSH_PERMISSION_MODE"):
        preset("dsh-base", env={"DSH_PERMISSION_MODE": "yolo"})
    with pytest.raises(InvalidArgument):
        preset("nope")


def test_views_serialise_to_json() -> None:
    view = schema(Config(sandbox="read-only"))
    data = json.loads(json.dumps(view.to_dict()))
    assert data["variant"] == "B" and data["tools"][0]["name"] == "bash"
    assert re.fullmatch(r"[0-9a-f]{64}", data["tools"][0]["description_facts"]["sha256"])
