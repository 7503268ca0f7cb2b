"""Escalation model: ladder, validation order, approval chain; agreement with live."""

from __future__ import annotations

import itertools

import pytest

from dsh_magics.errors import InvalidArgument
from dsh_magics.harness import (
    ESCALATION_TARGETS,
    OUTCOMES,
    WIDER_MODES,
    Bridge,
    EscalationRequest,
    escalate,
)
from dsh_magics.harness.escalation import STEPS

from .conftest import requires_node

MODES = ("read-only", "workspace-write", "danger-full-access")


def req(**kw: object) -> EscalationRequest:
    base: dict[str, object] = dict(
        mode="read-only",
        request="workspace-write",
        justification="the build writes to the workspace",
    )
    base.update(kw)
    return EscalationRequest(**base)  # type: ignore[arg-type]


def test_ladder_and_targets() -> None:
    assert WIDER_MODES["read-only"] == ("workspace-write", "danger-full-access")
    assert WIDER_MODES["workspace-write"] == ("danger-full-access",)
    assert WIDER_MODES["danger-full-access"] == ()
    assert ESCALATION_TARGETS == ("workspace-write", "danger-full-access")


VIOLATIONS = [
    (dict(justification=None), "justification-missing"),
    (dict(request=None), "justification-without-request"),
    (dict(justification="   "), "justification-blank"),
]


@pytest.mark.parametrize("kw,violation", VIOLATIONS)
def test_validation_violations(kw: dict[str, object], violation: str) -> None:
    r = escalate(req(**kw))
    assert (r.category, r.violation) == ("invalid-args", violation)
    assert [s.passed for s in r.steps] == [False, None, None, None, None, None]


def test_validation_runs_before_the_ladder() -> None:
    # Not wider AND missing justification: the argument check wins.
    r = escalate(req(mode="danger-full-access", justification=None))
    assert r.violation == "justification-missing"


def test_chain_order_and_each_stop() -> None:
    assert [k for k, _ in STEPS] == [
        "validate",
        "strictly-wider",
        "approver-composed",
        "agent-present",
        "request",
        "outcome",
    ]
    cases = [
        (req(mode="workspace-write", request="workspace-write"), "not-wider", 1),
        (req(approver=False, agent=False), "no-approver", 2),  # approver checked before agent
        (req(agent=False), "no-agent", 3),
        (req(outcome="rejected"), "rejected", 5),
        (req(outcome="cancelled"), "cancelled", 5),
        (req(outcome="unavailable"), "unavailable", 5),
    ]
    for r_in, category, fail_at in cases:
        r = escalate(r_in)
        assert r.category == category
        assert [s.passed for s in r.steps] == [True] * fail_at + [False] + [None] * (5 - fail_at)
        assert r.granted_mode is None and r.message and r.message_is_summary


def test_granted_once() -> None:
    r = escalate(req(request="danger-full-access"))
    assert r.category == "granted" and r.granted and r.granted_mode == "danger-full-access"
    assert all(s.passed for s in r.steps)


def test_policy_never_rejects_without_the_answerer() -> None:
    r = escalate(req(policy="never", outcome="allowed-once"))
    assert r.category == "rejected"
    assert "without consulting" in r.steps[4].detail


def test_not_requested() -> None:
    r = escalate(req(request=None, justification=None))
    assert r.category == "not-requested"


def test_danger_full_access_can_never_escalate() -> None:
    for target in MODES:
        assert escalate(req(mode="danger-full-access", request=target)).category == "not-wider"


def test_bad_request_inputs() -> None:
    with pytest.raises(InvalidArgument):
        escalate(req(mode="none"))
    with pytest.raises(InvalidArgument):
        escalate(req(outcome="maybe"))
    with pytest.raises(InvalidArgument):
        escalate(req(policy="sometimes"))


@pytest.mark.node
@requires_node
def test_model_and_live_agree_on_every_combination(bridge: Bridge) -> None:
    disagreements = []
    combos = itertools.product(
        MODES, MODES, OUTCOMES, (True, False), (True, False), ("ask", "never")
    )
    n = 0
    for mode, request, outcome, approver, agent, policy in combos:
        r_in = req(
            mode=mode,
            request=request,
            outcome=outcome,
            approver=approver,
            agent=agent,
            policy=policy,
        )
        model, live = escalate(r_in), escalate(r_in, "live")
        n += 1
        if (model.category, model.granted_mode, [s.passed for s in model.steps]) != (
            live.category,
            live.granted_mode,
            [s.passed for s in live.steps],
        ):
            disagreements.append((r_in, model.category, live.category, live.message))
        assert not live.message_is_summary
    assert n == 3 * 3 * 4 * 2 * 2 * 2
    assert disagreements == []


@pytest.mark.node
@requires_node
@pytest.mark.parametrize(
    "kw,violation", [*VIOLATIONS, (dict(request=None, justification=None), None)]
)
def test_model_and_live_agree_on_validation(
    bridge: Bridge, kw: dict[str, object], violation: str | None
) -> None:
    model, live = escalate(req(**kw)), escalate(req(**kw), "live")
    assert (live.category, live.violation) == (model.category, model.violation)
    assert live.violation == violation
