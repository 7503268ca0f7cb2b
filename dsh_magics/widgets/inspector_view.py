"""The inspector's view data: what one render shows, as frozen values.

Built by :mod:`.inspector_sections`, drawn by :mod:`.inspector_html`; tests read it directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..harness import ChainStep, EraInfo, InputStatus
from .inspector_controls import Controls, EscalationInputs


@dataclass(frozen=True)
class Badge:
    """Which source answered, which package version, and the live state."""

    source: str  # effective: "live" | "model"
    requested: str
    version: str
    state: str  # "ready" | "installing" | "booting" | "idle" | "unavailable" | "disabled"
    text: str
    detail: str = ""

    @property
    def loading(self) -> bool:
        return self.requested == "live" and self.state in ("idle", "installing", "booting")


@dataclass(frozen=True)
class ParamRow:
    name: str
    type: str
    enum: tuple[str, ...] | None
    required: bool
    status: str  # "same" | "added" | "removed" | "changed"
    changes: tuple[str, ...] = ()
    description: str | None = None
    description_is_summary: bool = False


@dataclass(frozen=True)
class ParamTable:
    tool: str
    rows: tuple[ParamRow, ...]
    baseline: str

    @property
    def names(self) -> tuple[str, ...]:
        """Parameters the current configuration has (removed rows excluded)."""
        return tuple(r.name for r in self.rows if r.status != "removed")

    def row(self, name: str) -> ParamRow:
        for r in self.rows:
            if r.name == name:
                return r
        raise KeyError(name)

    @property
    def added(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rows if r.status == "added")

    @property
    def removed(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rows if r.status == "removed")


@dataclass(frozen=True)
class JsonLine:
    status: str  # "same" | "added" | "removed"
    text: str


@dataclass(frozen=True)
class JsonView:
    text: str  # the current tool's JSON, pretty-printed
    lines: tuple[JsonLine, ...]  # current vs baseline, line diff
    descriptions_are_summaries: bool

    @property
    def changed(self) -> bool:
        return any(line.status != "same" for line in self.lines)


@dataclass(frozen=True)
class FragmentRow:
    key: str
    title: str
    summary: str
    text: str | None  # exact (live) or None (model)
    chars: int | None
    tokens: int | None
    status: str  # "same" | "added" | "removed" | "changed" (text differs from the baseline)


@dataclass(frozen=True)
class DescriptionView:
    fragments: tuple[FragmentRow, ...]
    exact: bool
    chars: int | None
    tokens: int | None
    baseline_chars: int | None
    baseline_tokens: int | None
    tool_chars: int | None
    tool_tokens: int | None
    baseline_tool_chars: int | None
    baseline_tool_tokens: int | None

    @staticmethod
    def _delta(a: int | None, b: int | None) -> int | None:
        return None if a is None or b is None else a - b

    @property
    def delta_chars(self) -> int | None:
        return self._delta(self.chars, self.baseline_chars)

    @property
    def delta_tokens(self) -> int | None:
        return self._delta(self.tokens, self.baseline_tokens)

    @property
    def tool_delta_chars(self) -> int | None:
        return self._delta(self.tool_chars, self.baseline_tool_chars)

    @property
    def tool_delta_tokens(self) -> int | None:
        return self._delta(self.tool_tokens, self.baseline_tool_tokens)


@dataclass(frozen=True)
class MatrixRowView:
    label: str
    background: bool
    sandbox: str | None
    variant: str | None
    cells: tuple[bool, ...]
    schema_id: str
    chars: int | None
    tokens: int | None
    current: bool
    load_error: str | None = None


@dataclass(frozen=True)
class MatrixView:
    source: str
    era: str
    columns: tuple[str, ...]
    rows: tuple[MatrixRowView, ...]
    distinct: int
    notes: tuple[str, ...] = ()

    @property
    def current(self) -> MatrixRowView | None:
        return next((r for r in self.rows if r.current), None)


@dataclass(frozen=True)
class ToolRow:
    name: str
    package: str
    params: tuple[str, ...]


@dataclass(frozen=True)
class EraView:
    era: EraInfo
    tools: tuple[ToolRow, ...]
    related: tuple[ToolRow, ...]
    eras: tuple[EraInfo, ...]

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools)


@dataclass(frozen=True)
class TargetRow:
    target: str
    reachable: bool  # strictly wider than the standing mode


@dataclass(frozen=True)
class EscalationView:
    inputs: EscalationInputs
    source: str
    category: str
    headline: str
    granted_mode: str | None
    steps: tuple[ChainStep, ...]
    message: str | None
    message_is_summary: bool
    targets: tuple[TargetRow, ...]
    advertised: bool  # are the fields in the current configuration's schema?
    notes: tuple[str, ...] = ()
    error: str | None = None

    @property
    def granted(self) -> bool:
        return self.category == "granted"


@dataclass(frozen=True)
class InspectorView:
    """Everything one render shows."""

    badge: Badge
    controls: Controls
    escalation_inputs: EscalationInputs
    config_label: str
    baseline_label: str
    variant: str | None
    inputs: tuple[InputStatus, ...]
    params: ParamTable
    json: JsonView
    description: DescriptionView
    matrix: MatrixView
    eras: EraView
    escalation: EscalationView
    notes: tuple[str, ...] = ()
    catalog: Any = None  # inspector_catalog.CatalogView when a catalog is loaded

    def applicable(self, name: str) -> bool:
        return next((i.applicable for i in self.inputs if i.name == name), True)


__all__ = [
    "Badge",
    "DescriptionView",
    "EraView",
    "EscalationView",
    "FragmentRow",
    "InspectorView",
    "JsonLine",
    "JsonView",
    "MatrixRowView",
    "MatrixView",
    "ParamRow",
    "ParamTable",
    "TargetRow",
    "ToolRow",
]
