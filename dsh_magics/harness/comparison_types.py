"""Values that compare schemas: the configuration matrix and the diff of two views."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from .schema_types import Config, InputStatus, Param, Source


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
