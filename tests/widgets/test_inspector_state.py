"""The inspector's view-model with the offline model: set controls, read the views.

No widgets and no browser here: :class:`InspectorState` is where every decision
is made (rows added/removed against the baseline, JSON diff lines, size deltas,
the current matrix row, the era's tool set, the escalation chain), so it is
tested directly against the real harness model.
"""

from __future__ import annotations

import pytest

from dsh_magics.errors import InvalidArgument
from dsh_magics.harness import ESCALATION_TARGETS
from dsh_magics.widgets.inspector_backend import HarnessBackend
from dsh_magics.widgets.inspector_controls import CUSTOM
from dsh_magics.widgets.inspector_state import InspectorState

BASE_PARAMS = ("command", "description", "timeoutMs", "workdir")


@pytest.fixture
def state() -> InspectorState:
    return InspectorState(HarnessBackend(live=False), source="model")


def test_defaults_are_the_catalog_default_against_itself(state: InspectorState) -> None:
    v = state.view()
    assert v.badge.source == "model" and "MODEL" in v.badge.text and "0.1.0-rc.8" in v.badge.text
    assert v.controls.preset == "catalog-default" and v.controls.baseline == "catalog-default"
    assert v.variant == "A"
    assert v.params.names == (*BASE_PARAMS, "run_in_background")
    assert all(r.status == "same" for r in v.params.rows)
    assert not v.json.changed
    assert v.description.delta_chars == 0 and v.description.tool_delta_tokens == 0


def test_background_off_removes_run_in_background_against_baseline(state: InspectorState) -> None:
    v = state.update(background=False)
    assert v.variant == "C"
    assert "run_in_background" not in v.params.names
    assert v.params.removed == ("run_in_background",)
    assert v.params.row("run_in_background").status == "removed"
    # The removed row stays where it stood in the baseline.
    assert [r.name for r in v.params.rows][4] == "run_in_background"
    removed_json = [line.text for line in v.json.lines if line.status == "removed"]
    assert any('"run_in_background"' in t for t in removed_json)
    assert not any(
        '"run_in_background"' in line.text for line in v.json.lines if line.status != "removed"
    )
    frags = {f.key: f.status for f in v.description.fragments}
    assert frags == {"base": "same", "background-off": "added", "background-on": "removed"}
    assert v.description.delta_chars is not None and v.description.delta_chars < 0
    assert v.controls.preset == CUSTOM


@pytest.mark.parametrize("mode", ["read-only", "workspace-write", "danger-full-access"])
def test_any_sandbox_mode_adds_the_escalation_fields(state: InspectorState, mode: str) -> None:
    v = state.update(sandbox=mode)
    assert v.variant == "B"
    assert v.params.added == ("sandbox_permissions", "justification")
    assert v.params.row("sandbox_permissions").enum == ESCALATION_TARGETS
    assert v.params.row("sandbox_permissions").required is False
    added_json = "\n".join(line.text for line in v.json.lines if line.status == "added")
    assert '"sandbox_permissions"' in added_json and '"justification"' in added_json
    d = v.description
    esc = next(f for f in d.fragments if f.key == "escalation")
    assert esc.status == "added"
    # The description grows by exactly the escalation fragment.
    assert d.delta_chars == esc.chars and d.delta_chars > 0
    assert d.tool_delta_chars is not None and d.tool_delta_chars > d.delta_chars
    assert d.tool_delta_tokens is not None and d.tool_delta_tokens > 0


def test_presets_drive_the_controls_and_manual_changes_pick_the_matching_preset(
    state: InspectorState,
) -> None:
    v = state.update(preset="dsh-base")
    assert (v.controls.background, v.controls.sandbox) == (True, "workspace-write")
    assert v.escalation_inputs.policy == "ask" and v.escalation_inputs.approver
    v = state.update(sandbox="read-only")
    assert v.controls.preset == "package-default"
    v = state.update(sandbox=None)
    assert v.controls.preset == "catalog-default"
    v = state.update(background=False, sandbox="danger-full-access")
    assert v.controls.preset == CUSTOM


def test_baseline_choice_changes_what_counts_as_added(state: InspectorState) -> None:
    v = state.update(preset="dsh-base", baseline="dsh-base")
    assert all(r.status == "same" for r in v.params.rows)
    v = state.update(baseline="no-background")
    assert set(v.params.added) == {"run_in_background", "sandbox_permissions", "justification"}
    assert v.baseline_label


def test_matrix_has_eight_rows_four_schemas_and_one_current(state: InspectorState) -> None:
    for bg in (True, False):
        for sb in (None, "read-only", "workspace-write", "danger-full-access"):
            v = state.update(background=bg, sandbox=sb)
            m = v.matrix
            assert len(m.rows) == 8 and m.distinct == 4
            current = [r for r in m.rows if r.current]
            assert len(current) == 1
            row = current[0]
            assert (row.background, row.sandbox) == (bg, sb)
            present = tuple(c for c, on in zip(m.columns, row.cells, strict=True) if on)
            assert present == v.params.names
            assert row.chars == v.description.tool_chars


def test_eras_change_the_tool_set_and_report_inapplicable_inputs(state: InspectorState) -> None:
    v = state.update(era="2026-06-12")
    assert {"bash_output", "bash_kill"} <= set(v.eras.tool_names)
    assert not v.applicable("enable_run_in_background")
    v = state.update(era="rfc-foreground-only", background=True)
    assert v.eras.tool_names == ("bash",)
    assert "run_in_background" not in v.params.names
    assert not v.applicable("enable_run_in_background")
    v = state.update(era="2026-07-11", sandbox="read-only")
    assert "sandbox_permissions" in v.params.names
    v = state.update(era="2026-08-13")
    assert v.eras.tool_names == ("bash", "job_kill", "job_list", "job_output")
    assert v.applicable("enable_run_in_background")


def test_live_requested_for_an_old_era_falls_back_to_the_model_and_says_so() -> None:
    st = InspectorState(HarnessBackend(live=False), source="model")
    v = st.update(source="live", era="2026-06-12")
    assert v.badge.source == "model" and v.badge.requested == "live"
    assert v.badge.detail  # explains why the model answers


def test_escalation_granted_from_read_only(state: InspectorState) -> None:
    v = state.update_escalation(mode="read-only", request="workspace-write", outcome="allowed-once")
    x = v.escalation
    assert x.category == "granted" and x.granted and x.granted_mode == "workspace-write"
    assert [s.passed for s in x.steps] == [True] * len(x.steps)
    assert x.message_is_summary and x.message and x.message.startswith("[summary]")
    assert [t.reachable for t in x.targets] == [True, True]


def test_danger_full_access_advertises_two_targets_neither_reachable(state: InspectorState) -> None:
    v = state.update(sandbox="danger-full-access")
    assert v.escalation_inputs.mode == "danger-full-access"  # follows the executor's mode
    assert v.params.row("sandbox_permissions").enum == ESCALATION_TARGETS
    for target in ESCALATION_TARGETS:
        x = state.update_escalation(request=target).escalation
        assert x.category == "not-wider"
        assert [t.reachable for t in x.targets] == [False, False]
        assert any("neither can ever succeed" in n for n in x.notes)
        first_failed = next(s for s in x.steps if s.passed is False)
        assert first_failed.key == "strictly-wider"
        assert all(s.passed is None for s in x.steps[x.steps.index(first_failed) + 1 :])


@pytest.mark.parametrize(
    ("inputs", "category", "failed_step"),
    [
        (dict(approver=False), "no-approver", "approver-composed"),
        (dict(agent=False), "no-agent", "agent-present"),
        (dict(policy="never"), "rejected", None),
        (dict(outcome="rejected"), "rejected", None),
        (dict(outcome="cancelled"), "cancelled", None),
        (dict(outcome="unavailable"), "unavailable", None),
        (dict(request="read-only"), "not-wider", "strictly-wider"),
        (dict(justification=""), "invalid-args", "validate"),
        (dict(justification="   "), "invalid-args", "validate"),
        (dict(request=None), "invalid-args", "validate"),
        (dict(request=None, justification=""), "not-requested", None),
    ],
)
def test_escalation_chain_outcomes(
    state: InspectorState, inputs: dict, category: str, failed_step: str | None
) -> None:
    x = state.update_escalation(**inputs).escalation
    assert x.category == category
    assert not x.granted
    keys = [s.key for s in x.steps]
    assert keys[:4] == ["validate", "strictly-wider", "approver-composed", "agent-present"]
    if failed_step is not None:
        assert next(s for s in x.steps if s.passed is False).key == failed_step


def test_escalation_notes_when_the_current_config_does_not_advertise(state: InspectorState) -> None:
    x = state.update(sandbox=None).escalation
    assert not x.advertised
    assert any("does not advertise" in n for n in x.notes)
    assert state.update(sandbox="read-only").escalation.advertised


def test_bad_control_values_raise_invalid_argument(state: InspectorState) -> None:
    with pytest.raises(InvalidArgument):
        state.update(sandbox="sideways")
    with pytest.raises(InvalidArgument):
        state.update(era="1999-01-01")
    with pytest.raises(InvalidArgument):
        state.update(colour="red")
    with pytest.raises(InvalidArgument):
        state.update_escalation(outcome="maybe")
    with pytest.raises(InvalidArgument):
        state.update(baseline="nothing")
    # The state is unchanged by rejected updates.
    assert state.view().controls.sandbox is None


def test_views_are_recomputed_only_on_change(state: InspectorState) -> None:
    a = state.view()
    assert state.view() is a
    b = state.update(background=False)
    assert b is not a and state.view() is b
