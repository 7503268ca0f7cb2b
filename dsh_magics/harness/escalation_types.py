"""Values of the escalation simulator: a request, the chain it runs, the result, the markers."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .schema_types import Outcome, Policy, SandboxMode, Source


@dataclass(frozen=True)
class EscalationRequest:
    """One escalation attempt, as ``bash`` would see it on a retry.

    ``mode`` is the call's current (effective) sandbox mode; ``request`` the
    ``sandbox_permissions`` value (``None`` = absent); ``outcome`` what the
    scripted approver answers; ``approver``/``agent`` whether an approval
    service is composed and the call has an agent; ``policy`` the approval
    service policy (``never`` rejects without asking).
    """

    mode: SandboxMode
    request: str | None
    justification: str | None
    outcome: Outcome = "allowed-once"
    approver: bool = True
    agent: bool = True
    policy: Policy = "ask"

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "request": self.request,
            "justification": self.justification,
            "outcome": self.outcome,
            "approver": self.approver,
            "agent": self.agent,
            "policy": self.policy,
        }


@dataclass(frozen=True)
class ChainStep:
    """One step of validation + approval.  ``passed`` is ``None`` when the
    chain stopped before reaching it.  ``detail`` is our wording."""

    key: str
    title: str
    passed: bool | None
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"key": self.key, "title": self.title, "passed": self.passed, "detail": self.detail}


@dataclass(frozen=True)
class EscalationResult:
    """What happened to an escalation attempt.

    ``category`` is the stable outcome class both sources agree on:
    ``granted``, ``invalid-args``, ``not-wider``, ``no-approver``,
    ``no-agent``, ``rejected``, ``cancelled``, ``unavailable``.
    ``violation`` names the failed argument check (``justification-missing``,
    ``justification-without-request``, ``justification-blank``) for
    ``invalid-args``.  ``message`` is the exact harness message (live) or our
    labelled summary (model, ``message_is_summary``).
    """

    source: Source
    request: EscalationRequest
    category: str
    steps: tuple[ChainStep, ...]
    granted_mode: str | None
    violation: str | None
    message: str | None
    message_is_summary: bool

    @property
    def granted(self) -> bool:
        return self.category == "granted"

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "request": self.request.to_dict(),
            "category": self.category,
            "granted_mode": self.granted_mode,
            "violation": self.violation,
            "message": self.message,
            "message_is_summary": self.message_is_summary,
            "steps": [s.to_dict() for s in self.steps],
        }


@dataclass(frozen=True)
class Markers:
    """The result-text markers for a sandbox denial under ``mode``.

    ``hint`` is present only when escalation is advertised.  Texts are exact
    (live) or our labelled summaries (model).
    """

    source: Source
    mode: SandboxMode
    denial: str
    hint: str | None
    is_summary: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "mode": self.mode,
            "denial": self.denial,
            "hint": self.hint,
            "is_summary": self.is_summary,
        }
