"""What shapes a ``bash`` tool schema (config, era, preset) and the schema itself.

Every source becomes the same :class:`SchemaView`; all are frozen dataclasses with ``to_dict()``.
Comparisons, escalation and catalog values have their own ``*_types`` modules.
"""

from __future__ import annotations

from dataclasses import dataclass
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
