"""The live bridge's state as progress displays read it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal


@dataclass(frozen=True)
class LiveStatus:
    """The live bridge's state, for progress displays.

    ``state``: ``idle`` (nothing started), ``installing``, ``booting``,
    ``ready``, ``unavailable`` (node/npm/registry missing or boot failed;
    ``message`` says why).
    """

    state: Literal["idle", "installing", "booting", "ready", "unavailable"]
    version: str
    message: str = ""
    installed: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "version": self.version,
            "message": self.message,
            "installed": self.installed,
        }
