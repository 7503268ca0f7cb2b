"""Values read from a harness ``tool-catalog.md``, and its drift from a source."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .comparison_types import SchemaDiff
from .schema_types import Config, Source


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
