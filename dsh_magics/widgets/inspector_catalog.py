"""Catalog browsing for the inspector: every tool of a harness ``tool-catalog.md``.

View state, not core: the core parses the catalog and checks ``bash``'s drift.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from html import escape
from typing import TYPE_CHECKING, Any

from ..errors import DshError, InvalidArgument
from ..harness import Catalog, CatalogTool, Config, Tool, estimate_tokens

if TYPE_CHECKING:
    from .inspector_state import InspectorState

BASH_PACKAGE = "@deepseek-ai/dsh-tool-bash"


@dataclass(frozen=True)
class CatalogParam:
    name: str
    type: str
    enum: tuple[str, ...] | None
    required: bool


@dataclass(frozen=True)
class CatalogDrift:
    """The catalog entry vs its live or model counterpart."""

    source: str
    ok: bool
    findings: tuple[str, ...]  # our wording, one line each
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class CatalogEntry:
    key: str  # "package::tool"
    package: str
    name: str
    line: int
    params: tuple[CatalogParam, ...]
    description: str
    chars: int
    tokens: int
    source: str | None
    drift: CatalogDrift | None  # None: no counterpart in the model or live


@dataclass(frozen=True)
class CatalogView:
    path: str
    title: str
    packages: tuple[tuple[str, tuple[str, ...], str | None], ...]
    keys: tuple[str, ...]
    selected: CatalogEntry

    @property
    def tool_count(self) -> int:
        return len(self.keys)


def _params(parameters: dict[str, Any]) -> tuple[CatalogParam, ...]:
    req = set(parameters.get("required") or ())
    out = []
    for name, node in (parameters.get("properties") or {}).items():
        enum = node.get("enum")
        out.append(
            CatalogParam(
                name, str(node.get("type", "?")), tuple(enum) if enum else None, name in req
            )
        )
    return tuple(out)


def _structural_findings(cat: tuple[CatalogParam, ...], tool: Tool) -> list[str]:
    found: list[str] = []
    theirs = {p.name: p for p in tool.params}
    ours = {p.name: p for p in cat}
    found += [f"+ {n} (only in the source)" for n in theirs if n not in ours]
    found += [f"− {n} (only in the catalog)" for n in ours if n not in theirs]
    order_cat = [p.name for p in cat if p.name in theirs]
    order_src = [p.name for p in tool.params if p.name in ours]
    if order_cat != order_src:
        found.append(f"order differs: catalog {order_cat}, source {order_src}")
    for p in cat:
        q = theirs.get(p.name)
        if q is None:
            continue
        if q.type != p.type:
            found.append(f"~ {p.name}: type {p.type} vs {q.type}")
        if q.enum != p.enum:
            found.append(f"~ {p.name}: enum {list(p.enum or ())} vs {list(q.enum or ())}")
        if q.required != p.required:
            found.append(f"~ {p.name}: required {p.required} vs {q.required}")
    return found


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class CatalogState:
    """A loaded catalog and the selected tool (default: the ``bash`` of dsh-tool-bash)."""

    def __init__(self, catalog: Catalog, selected: str | None = None) -> None:
        self.catalog = catalog
        self.tools: dict[str, CatalogTool] = {
            f"{t.package}::{t.name}": t for p in catalog.packages for t in p.tools
        }
        if not self.tools:
            raise InvalidArgument(f"catalog {catalog.path} lists no tools")
        default = f"{BASH_PACKAGE}::bash"
        self.selected = selected or (default if default in self.tools else next(iter(self.tools)))
        self.select(self.selected)
        self._drift_cache: dict[tuple[str, str], CatalogDrift | None] = {}

    def select(self, key: str) -> None:
        if key not in self.tools:
            shown = ", ".join(self.tools)
            raise InvalidArgument(f"no tool {key!r} in the catalog; expected one of {shown}")
        self.selected = key

    def options(self) -> list[tuple[str, str]]:
        return [(f"{t.package} · {t.name}", k) for k, t in self.tools.items()]

    def _drift(self, state: InspectorState, key: str, source: str) -> CatalogDrift | None:
        cached = self._drift_cache.get((key, source))
        if (key, source) in self._drift_cache:
            return cached
        t = self.tools[key]
        drift: CatalogDrift | None
        try:
            if t.package == BASH_PACKAGE and t.name == "bash":
                d = state.backend.check(self.catalog, source)
                findings = [f"+ {p.name} (only in the source)" for p in d.diff.added]
                findings += [f"− {p.name} (only in the catalog)" for p in d.diff.removed]
                findings += [
                    f"~ {c.name}: {c.facet} {c.before} vs {c.after}" for c in d.diff.changed
                ]
                findings += [f"fragment only in the source: {k}" for k in d.diff.fragments_added]
                findings += [f"fragment only in the catalog: {k}" for k in d.diff.fragments_removed]
                findings += [f"text differs (SHA-256): {m}" for m in d.text_mismatches]
                drift = CatalogDrift(d.source, d.ok, tuple(findings), d.notes)
            else:
                view = state.backend.schema(Config(), source)
                match = [
                    x
                    for x in (*view.tools, *view.related)
                    if x.package == t.package and x.name == t.name
                ]
                if not match:
                    drift = None
                else:
                    tool = match[0]
                    findings = _structural_findings(_params(t.parameters), tool)
                    notes: list[str] = []
                    if not tool.description_is_summary:
                        if _sha(tool.description) != _sha(t.description):
                            findings.append("text differs (SHA-256): description")
                    elif tool.description_facts is not None:
                        if tool.description_facts.sha256 != _sha(t.description):
                            findings.append("text differs (SHA-256): description")
                    else:
                        notes.append("the source does not know this description's hash")
                    drift = CatalogDrift(view.source, not findings, tuple(findings), tuple(notes))
        except DshError as exc:
            drift = CatalogDrift(source, False, (f"cannot compare: {exc.code}: {exc.message}",))
        self._drift_cache[(key, source)] = drift
        return drift

    def view(self, state: InspectorState) -> CatalogView:
        t = self.tools[self.selected]
        entry = CatalogEntry(
            key=self.selected,
            package=t.package,
            name=t.name,
            line=t.line,
            params=_params(t.parameters),
            description=t.description,
            chars=len(t.description),
            tokens=estimate_tokens(t.description),
            source=t.source,
            drift=self._drift(state, self.selected, state.effective_source()),
        )
        packages = tuple(
            (p.name, tuple(x.name for x in p.tools), p.note) for p in self.catalog.packages
        )
        return CatalogView(
            self.catalog.path, self.catalog.title, packages, tuple(self.tools), entry
        )


def catalog_html(c: CatalogView | None) -> str:
    if c is None:
        return '<div class="dsh-note">No catalog loaded (use %bash_schema --catalog PATH).</div>'
    e = c.selected
    pk = "".join(
        f"<tr><td><code>{escape(name)}</code></td><td>{escape(', '.join(tools))}</td></tr>"
        for name, tools, _note in c.packages
    )
    params = "".join(
        f'<tr data-param="{escape(p.name)}"><td><code>{escape(p.name)}</code></td><td>{escape(p.type)}</td>'
        f"<td>{escape(', '.join(p.enum or ()))}</td><td>{'yes' if p.required else ''}</td></tr>"
        for p in e.params
    )
    if e.drift is None:
        drift = '<div class="dsh-note" data-drift="none">No live or model counterpart for this tool.</div>'
    elif e.drift.ok:
        drift = (
            f'<div class="dsh-pass" data-drift="ok">No drift against {escape(e.drift.source)}: '
            "same parameters, order, types, enums, required flags and text hashes.</div>"
        )
    else:
        items = "".join(f"<li>{escape(f)}</li>" for f in e.drift.findings)
        drift = (
            f'<div class="dsh-fail" data-drift="drift">Drift against {escape(e.drift.source)}:</div>'
            f"<ul>{items}</ul>"
        )
    if e.drift is not None and e.drift.notes:
        drift += "".join(f'<div class="dsh-note">{escape(n)}</div>' for n in e.drift.notes)
    return (
        f"<div><b>Catalog</b> {escape(c.path)} — {escape(c.title)}: {c.tool_count} tools</div>"
        f'<table class="dsh-catalog-packages"><tr><th>package</th><th>tools</th></tr>{pk}</table>'
        f'<div data-catalog-tool="{escape(e.key)}"><b>{escape(e.name)}</b> from <code>{escape(e.package)}</code>'
        f" (line {e.line}; {e.chars:,} chars, ≈{e.tokens:,} tokens)</div>"
        f'<table class="dsh-params"><tr><th>parameter</th><th>type</th><th>enum</th><th>required</th></tr>'
        f"{params}</table>"
        f'<div class="dsh-catalog-desc">{escape(e.description)}</div>' + drift
    )


def catalog_text(c: CatalogView | None) -> str:
    if c is None:
        return "no catalog loaded"
    e = c.selected
    lines = [f"catalog {c.path}: {c.tool_count} tools"]
    lines += [f"  {name}: {', '.join(tools)}" for name, tools, _n in c.packages]
    lines.append(f"selected: {e.package} · {e.name} ({', '.join(p.name for p in e.params)})")
    if e.drift is None:
        lines.append("  no live or model counterpart")
    elif e.drift.ok:
        lines.append(f"  no drift against {e.drift.source}")
    else:
        lines += [f"  drift vs {e.drift.source}: {f}" for f in e.drift.findings]
    return "\n".join(lines)
