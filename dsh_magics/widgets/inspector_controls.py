"""The inspector's inputs: the schema controls and the escalation simulator's inputs.

Plain frozen values the state replaces as a whole; no harness calls happen here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InvalidArgument
from ..harness import CURRENT_ERA, Config, EscalationRequest

SOURCES = ("live", "model")
CUSTOM = "custom"
CONFINED = ("read-only", "workspace-write", "danger-full-access")

#: Baselines the user can compare against, besides the presets themselves.
EXTRA_BASELINES: dict[str, tuple[str, bool, str | None]] = {
    "no-background": ("enableRunInBackground off, unconfined", False, None),
    "no-background-confined": (
        "enableRunInBackground off, confining executor",
        False,
        "workspace-write",
    ),
}
#: Same background/sandbox as the current controls, in the current era.
CURRENT_ERA_BASELINE = "current-era"


@dataclass(frozen=True)
class Controls:
    """The schema controls.  ``source`` is what the user asked for."""

    source: str = "model"
    era: str = CURRENT_ERA
    background: bool = True
    sandbox: str | None = None
    preset: str = "catalog-default"  # or CUSTOM
    baseline: str = "catalog-default"

    def config(self) -> Config:
        return Config(background=self.background, sandbox=self.sandbox, era=self.era)  # type: ignore[arg-type]


@dataclass(frozen=True)
class EscalationInputs:
    """The escalation simulator's inputs (our default justification is our own words)."""

    mode: str = "read-only"
    request: str | None = "workspace-write"
    justification: str = "The build has to write its output into the workspace."
    outcome: str = "allowed-once"
    approver: bool = True
    agent: bool = True
    policy: str = "ask"

    def to_request(self) -> EscalationRequest:
        return EscalationRequest(
            mode=self.mode,  # type: ignore[arg-type]
            request=self.request,
            # "" is an absent field; whitespace is a blank (invalid) justification.
            justification=self.justification if self.justification != "" else None,
            outcome=self.outcome,  # type: ignore[arg-type]
            approver=self.approver,
            agent=self.agent,
            policy=self.policy,  # type: ignore[arg-type]
        )


def check_choice(value: Any, allowed: Any, what: str) -> None:
    allowed = list(allowed)
    if value not in allowed:
        shown = ", ".join("none" if a is None else str(a) for a in allowed)
        raise InvalidArgument(f"unknown {what} {value!r}; expected one of {shown}")


__all__ = [
    "CONFINED",
    "CURRENT_ERA_BASELINE",
    "CUSTOM",
    "EXTRA_BASELINES",
    "SOURCES",
    "Controls",
    "EscalationInputs",
    "check_choice",
]
