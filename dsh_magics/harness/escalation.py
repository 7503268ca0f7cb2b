"""The escalation and approval model: argument checks, then the approval chain.

The order of the checks: docs/inspector.md, "Internals"; messages here are ours, labelled.
"""

from __future__ import annotations

from ..errors import InvalidArgument
from .escalation_types import ChainStep, EscalationRequest, EscalationResult, Markers
from .facts import CONFINED_MODES, OUTCOMES, POLICIES, WIDER_MODES, check_mode
from .schema_types import SUMMARY_LABEL

#: Step keys and titles, in chain order (titles are ours).
STEPS: tuple[tuple[str, str], ...] = (
    ("validate", "Arguments valid"),
    ("strictly-wider", "Requested mode strictly wider"),
    ("approver-composed", "Approval service composed"),
    ("agent-present", "Call has an agent"),
    ("request", "Approver asked"),
    ("outcome", "Outcome"),
)

#: Every category a result can have; both sources use the same set.
CATEGORIES: tuple[str, ...] = (
    "granted",
    "not-requested",
    "invalid-args",
    "not-wider",
    "no-approver",
    "no-agent",
    "rejected",
    "cancelled",
    "unavailable",
)

VIOLATIONS: tuple[str, ...] = (
    "justification-missing",
    "justification-without-request",
    "justification-blank",
)

# Our wording for each way the chain can end.
_MESSAGES: dict[str, str] = {
    "justification-missing": "Refused before approval: a wider mode was requested without a reason.",
    "justification-without-request": "Refused before approval: a reason was given but no wider mode was requested.",
    "justification-blank": "Refused before approval: the reason is empty.",
    "not-wider": "Refused: the requested mode is not strictly wider than the call's current mode, so nobody is asked.",
    "no-approver": "Refused: escalation needs approval, and no approval service is part of the composition.",
    "no-agent": "Refused: escalation needs approval, and this call has no agent to ask through.",
    "rejected": "The user declined the escalation for this command.",
    "cancelled": "The approval request was cancelled.",
    "unavailable": "Refused: no approval channel could answer.",
    "granted": "Approved once: this call runs under the requested mode.",
    "not-requested": "No escalation requested: the call runs under its current mode.",
}

# For each failing category: the index of the step that fails (later steps not reached).
_FAILS_AT: dict[str, int] = {
    "invalid-args": 0,
    "not-wider": 1,
    "no-approver": 2,
    "no-agent": 3,
    "rejected": 5,
    "cancelled": 5,
    "unavailable": 5,
}


def check_request(req: EscalationRequest) -> None:
    """Reject inputs the model cannot represent, with ``INVALID_ARGUMENT``."""
    check_mode(req.mode, allow_none=False)
    if req.outcome not in OUTCOMES:
        raise InvalidArgument(
            f"unknown outcome {req.outcome!r}; expected one of {', '.join(OUTCOMES)}"
        )
    if req.policy not in POLICIES:
        raise InvalidArgument(
            f"unknown policy {req.policy!r}; expected one of {', '.join(POLICIES)}"
        )


def violation_of(req: EscalationRequest) -> str | None:
    """The first failed argument check, in the harness's check order."""
    if req.request is not None and req.justification is None:
        return "justification-missing"
    if req.justification is not None and req.request is None:
        return "justification-without-request"
    if req.justification is not None and req.justification.strip() == "":
        return "justification-blank"
    return None


def model_category(req: EscalationRequest) -> tuple[str, str | None]:
    """``(category, violation)`` for ``req`` according to the facts."""
    violation = violation_of(req)
    if violation is not None:
        return "invalid-args", violation
    if req.request is None:
        return "not-requested", None
    if req.request not in WIDER_MODES.get(req.mode, ()):
        return "not-wider", None
    if not req.approver:
        return "no-approver", None
    if not req.agent:
        return "no-agent", None
    outcome = "rejected" if req.policy == "never" else req.outcome
    return ("granted" if outcome == "allowed-once" else outcome), None


def chain_steps(
    req: EscalationRequest, category: str, violation: str | None, failure_detail: str = ""
) -> tuple[ChainStep, ...]:
    """The six steps with pass/fail/not-reached for a given ending.

    Shared by the model and the live path, so both draw the same chain.
    """
    if category == "not-requested":
        return (
            ChainStep("validate", STEPS[0][1], True, "no escalation fields set"),
            *(ChainStep(k, t, None, "") for k, t in STEPS[1:]),
        )
    fail_at = _FAILS_AT.get(category)
    details = {
        "validate": f"violation: {violation}" if violation else "both fields set, reason not blank",
        "strictly-wider": f"{req.mode} -> {req.request}",
        "approver-composed": "composed" if req.approver else "absent",
        "agent-present": "present" if req.agent else "absent",
        "request": (
            "policy never: the service rejects without consulting an answerer"
            if req.policy == "never"
            else f"scripted answerer replies {req.outcome}"
        ),
        "outcome": category
        if category != "granted"
        else f"allowed-once: {req.request} for this call",
    }
    steps: list[ChainStep] = []
    for i, (key, title) in enumerate(STEPS):
        if fail_at is None or i < fail_at:
            passed: bool | None = True
        elif i == fail_at:
            passed = False
        else:
            passed = None
        detail = details[key] if passed is not None else ""
        if passed is False and failure_detail:
            detail = f"{detail} — {failure_detail}" if detail else failure_detail
        steps.append(ChainStep(key, title, passed, detail))
    return tuple(steps)


def model_escalate(req: EscalationRequest) -> EscalationResult:
    """Walk the chain for ``req`` using the facts only."""
    check_request(req)
    category, violation = model_category(req)
    return EscalationResult(
        source="model",
        request=req,
        category=category,
        steps=chain_steps(req, category, violation),
        granted_mode=req.request if category == "granted" else None,
        violation=violation,
        message=SUMMARY_LABEL + _MESSAGES[violation or category],
        message_is_summary=True,
    )


def model_markers(mode: str, *, escalation_advertised: bool = True) -> Markers:
    """Our description of the denial marker (and hint) for ``mode``."""
    if mode not in CONFINED_MODES:
        check_mode(mode, allow_none=False)
    return Markers(
        source="model",
        mode=mode,  # type: ignore[arg-type]
        denial=SUMMARY_LABEL + f"a bracketed sandbox line reporting that the {mode} policy "
        "blocked a file operation",
        hint=(
            SUMMARY_LABEL + "a second bracketed sandbox line: one escalated re-run with "
            "sandbox_permissions and a justification is possible, and the user will be prompted"
            if escalation_advertised
            else None
        ),
        is_summary=True,
    )
