"""Value types shared by the model, the live bridge, the catalog reader and diffs.

Every source becomes the same :class:`SchemaView`; all are frozen dataclasses with ``to_dict()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

SandboxMode = Literal["read-only", "workspace-write", "danger-full-access"]
Source = Literal["model", "live", "catalog"]
Outcome = Literal["allowed-once", "rejected", "cancelled", "unavailable"]
Policy = Literal["ask", "never"]

#: Prefix put in front of every text our model writes in place of harness prose,
#: so nobody mistakes a summary for the exact text the model sees.
SUMMARY_LABEL = "[summary] "


@dataclass(frozen=True)
class Config:
    """The schema-shaping inputs of one composition.

    ``background`` is the plugin's ``enableRunInBackground`` (default true).
    ``sandbox`` is the mounted executor's sandbox mode; ``None`` means an
    unconfined executor (``dsh-bash-local``).  ``sandbox_policy`` says whether a
    sandbox policy service is composed; a set ``sandbox`` without one is the
    plugin's load error.  ``era`` picks the history point (see ``ERAS``).
    """

    background: bool = True
    sandbox: SandboxMode | None = None
    era: str = "2026-08-13"
    sandbox_policy: bool = True

    def label(self) -> str:
        """Short human label, e.g. ``bg=on sandbox=read-only``."""
        sb = self.sandbox or "none"
        text = f"bg={'on' if self.background else 'off'} sandbox={sb}"
        if self.era != "2026-08-13":
            text += f" era={self.era}"
        if not self.sandbox_policy:
            text += " no-policy"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "background": self.background,
            "sandbox": self.sandbox,
            "era": self.era,
            "sandbox_policy": self.sandbox_policy,
        }


@dataclass(frozen=True)
class InputStatus:
    """Whether one input of :class:`Config` means anything in the chosen era.

    Inputs that do not exist in an era are reported, never silently ignored.
    """

    name: str  # "enable_run_in_background" | "sandbox"
    value: Any
    applicable: bool
    note: str  # our wording: why (not) applicable

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "applicable": self.applicable,
            "note": self.note,
        }


@dataclass(frozen=True)
class TextFact:
    """Facts about one harness text without the text itself: length and hash.

    ``length`` is the JS/Python string length, ``sha256`` the hex digest of the
    UTF-8 bytes, ``json_length`` the length of its JSON string encoding without
    the quotes (``ensure_ascii=False``), ``tokens`` our estimate (see
    :mod:`dsh_magics.harness.tokens`).
    """

    length: int
    sha256: str
    json_length: int
    tokens: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "length": self.length,
            "sha256": self.sha256,
            "json_length": self.json_length,
            "tokens": self.tokens,
        }


@dataclass(frozen=True)
class Param:
    """One model-visible parameter, in schema order.

    ``description`` is the exact harness text for live/catalog sources, or our
    own labelled summary for the model (``description_is_summary``).
    """

    name: str
    type: str
    enum: tuple[str, ...] | None
    required: bool
    position: int  # 0-based position in ``properties``
    description: str | None
    description_is_summary: bool = False
    text: TextFact | None = None  # facts about the exact description text, when known

    def structure(self) -> dict[str, Any]:
        """The comparable facts: name, type, enum, required, position."""
        return {
            "name": self.name,
            "type": self.type,
            "enum": list(self.enum) if self.enum is not None else None,
            "required": self.required,
            "position": self.position,
        }

    def to_dict(self) -> dict[str, Any]:
        out = self.structure()
        out["description"] = self.description
        out["description_is_summary"] = self.description_is_summary
        out["text"] = self.text.to_dict() if self.text else None
        return out


@dataclass(frozen=True)
class Fragment:
    """One piece of the ``bash`` tool description.

    ``key`` is one of ``base``, ``background-on``, ``background-off``,
    ``escalation``.  ``summary`` is always our own one-line wording.  ``text``
    is the exact harness text only when the source is live or a catalog.
    """

    key: str
    summary: str
    text: str | None = None
    facts: TextFact | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "summary": self.summary,
            "text": self.text,
            "facts": self.facts.to_dict() if self.facts else None,
        }


@dataclass(frozen=True)
class Tool:
    """One registered tool as the model sees it: ``{name, description, parameters}``.

    ``parameters`` is the JSON Schema with the exact key order of the harness
    compiler (root: type, properties, required; property: type, description,
    enum).  In model views its description strings are labelled summaries, so
    :meth:`structure` (descriptions blanked) is what compares across sources.
    """

    name: str
    package: str
    description: str
    parameters: dict[str, Any]
    params: tuple[Param, ...]
    fragments: tuple[Fragment, ...] = ()
    description_is_summary: bool = False
    description_facts: TextFact | None = None

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    @property
    def param_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def structure(self) -> dict[str, Any]:
        """``{name, parameters}`` with every description replaced by ``"…"``.

        Key order is preserved, so ``json.dumps`` of two structures compares the
        exact JSON shape of two sources.
        """
        from .schema_json import blank_descriptions

        return {"name": self.name, "parameters": blank_descriptions(self.parameters)}

    def model_json(self) -> dict[str, Any]:
        """``{name, description, parameters}``: the model-visible projection."""
        return {"name": self.name, "description": self.description, "parameters": self.parameters}

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "package": self.package,
            "description": self.description,
            "description_is_summary": self.description_is_summary,
            "description_facts": self.description_facts.to_dict()
            if self.description_facts
            else None,
            "parameters": self.parameters,
            "params": [p.to_dict() for p in self.params],
            "fragments": [f.to_dict() for f in self.fragments],
        }


@dataclass(frozen=True)
class SchemaView:
    """Everything the inspector shows for one configuration from one source.

    ``tools`` is the model-visible tool set of the composition (``bash`` plus the
    background tools of the era).  ``related`` holds tools that are not part of
    it but matter for comparison: the ``bash`` of dsh-tool-bash-persistent and
    the ``pwsh`` twin.  ``variant`` is ``A``..``D`` for the current era (the
    reference's naming), else ``None``.
    """

    config: Config
    source: Source
    version: str | None
    tools: tuple[Tool, ...]
    related: tuple[Tool, ...]
    inputs: tuple[InputStatus, ...]
    variant: str | None
    notes: tuple[str, ...] = ()

    @property
    def bash(self) -> Tool:
        return self.tool("bash")

    def tool(self, name: str) -> Tool:
        for t in self.tools:
            if t.name == name:
                return t
        raise KeyError(name)

    @property
    def tool_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tools)

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config.to_dict(),
            "source": self.source,
            "version": self.version,
            "variant": self.variant,
            "inputs": [i.to_dict() for i in self.inputs],
            "tools": [t.to_dict() for t in self.tools],
            "related": [t.to_dict() for t in self.related],
            "notes": list(self.notes),
        }


@dataclass(frozen=True)
class MatrixRow:
    """One configuration of the matrix: which ``bash`` parameters it has."""

    config: Config
    variant: str | None
    params: tuple[str, ...]  # bash parameter names, in order
    fragments: tuple[str, ...]  # fragment keys present
    schema_id: str  # short hash of the bash structure; equal ids = same schema
    chars: int | None  # whole-tool model text length (None when unknown)
    tokens: int | None
    load_error: str | None = None  # set instead of params when the plugin cannot load

    def to_dict(self) -> dict[str, Any]:
        return {
            "config": self.config.to_dict(),
            "variant": self.variant,
            "params": list(self.params),
            "fragments": list(self.fragments),
            "schema_id": self.schema_id,
            "chars": self.chars,
            "tokens": self.tokens,
            "load_error": self.load_error,
        }


@dataclass(frozen=True)
class Matrix:
    """Every configuration × parameter.  ``columns`` is the union of parameter
    names in first-seen order; ``distinct`` counts distinct schemas."""

    source: Source
    era: str
    columns: tuple[str, ...]
    rows: tuple[MatrixRow, ...]
    distinct: int
    inputs: tuple[InputStatus, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "era": self.era,
            "columns": list(self.columns),
            "rows": [r.to_dict() for r in self.rows],
            "distinct": self.distinct,
            "inputs": [i.to_dict() for i in self.inputs],
        }


@dataclass(frozen=True)
class ParamChange:
    """One changed facet of a parameter present on both sides."""

    name: str
    facet: Literal["type", "enum", "required", "position"]
    before: Any
    after: Any

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "facet": self.facet, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class SchemaDiff:
    """``b`` relative to ``a`` for one tool (default ``bash``).

    Sizes are of the whole tool schema as the model sees it (compact JSON of
    ``{name, description, parameters}``); ``*_delta`` = b − a.  ``chars``/``tokens``
    are ``None`` on a side whose exact text size is unknown.
    """

    a_label: str
    b_label: str
    tool: str
    added: tuple[Param, ...]
    removed: tuple[Param, ...]
    changed: tuple[ParamChange, ...]
    fragments_added: tuple[str, ...]
    fragments_removed: tuple[str, ...]
    tools_added: tuple[str, ...]
    tools_removed: tuple[str, ...]
    chars_a: int | None
    chars_b: int | None
    tokens_a: int | None
    tokens_b: int | None
    #: Fragments (same key on both sides) and parameters whose text differs.
    fragments_changed: tuple[str, ...] = ()
    texts_changed: tuple[str, ...] = ()
    #: How texts were compared: ``exact`` (both sides live), ``sha256`` (stored
    #: facts on at least one side), or ``no`` (a side's texts are unknown).
    texts_compared: str = "no"

    @property
    def chars_delta(self) -> int | None:
        if self.chars_a is None or self.chars_b is None:
            return None
        return self.chars_b - self.chars_a

    @property
    def tokens_delta(self) -> int | None:
        if self.tokens_a is None or self.tokens_b is None:
            return None
        return self.tokens_b - self.tokens_a

    @property
    def structurally_equal(self) -> bool:
        return not (
            self.added
            or self.removed
            or self.changed
            or self.fragments_added
            or self.fragments_removed
            or self.tools_added
            or self.tools_removed
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "a": self.a_label,
            "b": self.b_label,
            "tool": self.tool,
            "added": [p.structure() for p in self.added],
            "removed": [p.structure() for p in self.removed],
            "changed": [c.to_dict() for c in self.changed],
            "fragments_added": list(self.fragments_added),
            "fragments_removed": list(self.fragments_removed),
            "tools_added": list(self.tools_added),
            "tools_removed": list(self.tools_removed),
            "chars_a": self.chars_a,
            "chars_b": self.chars_b,
            "chars_delta": self.chars_delta,
            "tokens_a": self.tokens_a,
            "tokens_b": self.tokens_b,
            "tokens_delta": self.tokens_delta,
            "structurally_equal": self.structurally_equal,
            "fragments_changed": list(self.fragments_changed),
            "texts_changed": list(self.texts_changed),
            "texts_compared": self.texts_compared,
        }


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


@dataclass(frozen=True)
class Preset:
    """A named composition: a :class:`Config` plus its approval setup."""

    key: str
    title: str
    config: Config
    policy: Policy
    approver: bool
    note: str  # our wording

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "config": self.config.to_dict(),
            "policy": self.policy,
            "approver": self.approver,
            "note": self.note,
        }


@dataclass(frozen=True)
class EraInfo:
    """One point in the history of the ``bash`` tool surface."""

    key: str
    title: str
    summary: str  # our wording
    shipped: bool
    background_toggle: bool  # does enable_run_in_background exist?
    escalation: bool  # can sandbox_permissions/justification appear?
    tools: tuple[str, ...]  # model-visible tool names in a default composition
    published: str | None = None  # dsh-tool-bash version with this era's exact texts

    @property
    def texts(self) -> str:
        """Where exact texts come from: ``live (<version>)`` or ``modelled``."""
        return f"live ({self.published})" if self.published else "modelled"

    def to_dict(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "summary": self.summary,
            "shipped": self.shipped,
            "background_toggle": self.background_toggle,
            "escalation": self.escalation,
            "tools": list(self.tools),
            "published": self.published,
            "texts": self.texts,
        }


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


@dataclass(frozen=True)
class CatalogTool:
    """One ``###`` tool section of a catalog, with its 1-based line numbers."""

    package: str
    name: str
    description: str
    parameters: dict[str, Any]
    source: str | None
    line: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "package": self.package,
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
            "source": self.source,
            "line": self.line,
        }


@dataclass(frozen=True)
class CatalogPackage:
    """One ``##`` package section: anchor, tools (catalog order) and note."""

    name: str
    anchor: str | None
    tools: tuple[CatalogTool, ...]
    note: str | None
    line: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "anchor": self.anchor,
            "tools": [t.to_dict() for t in self.tools],
            "note": self.note,
            "line": self.line,
        }


@dataclass(frozen=True)
class Catalog:
    """A parsed ``docs/tool-catalog.md``."""

    path: str
    title: str
    packages: tuple[CatalogPackage, ...]
    map_rows: tuple[tuple[str, ...], ...] = ()

    def package(self, name: str) -> CatalogPackage:
        for p in self.packages:
            if p.name == name:
                return p
        raise KeyError(name)

    def tools_named(self, name: str) -> list[CatalogTool]:
        return [t for p in self.packages for t in p.tools if t.name == name]

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "title": self.title,
            "packages": [p.to_dict() for p in self.packages],
            "map_rows": [list(r) for r in self.map_rows],
        }


@dataclass(frozen=True)
class Drift:
    """``check(catalog, source)``: the catalog's ``bash`` entry vs a source.

    ``diff`` is structural (catalog = a, source = b).  ``text_mismatches``
    lists texts whose hash differs (``"description"`` or ``"param:<name>"``);
    empty when texts are identical.  ``ok`` is true when nothing drifted.
    """

    catalog_path: str
    source: Source
    config: Config
    diff: SchemaDiff
    text_mismatches: tuple[str, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ok(self) -> bool:
        return self.diff.structurally_equal and not self.text_mismatches

    def to_dict(self) -> dict[str, Any]:
        return {
            "catalog": self.catalog_path,
            "source": self.source,
            "config": self.config.to_dict(),
            "ok": self.ok,
            "diff": self.diff.to_dict(),
            "text_mismatches": list(self.text_mismatches),
            "notes": list(self.notes),
        }
