"""Reader for the harness's generated ``docs/tool-catalog.md``, and drift checks.

Anything outside the format (docs/inspector.md) is a :class:`CatalogError` naming the line.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidArgument
from .catalog_types import Catalog, CatalogPackage, CatalogTool, Drift
from .errors import CatalogError
from .live import known_fragments, text_fact, tool_from_json
from .model import BASH_PKG, JOBS_PKG, PERSISTENT_PKG, input_statuses, variant_of
from .schema_types import Config, SchemaView, Tool

MAP_HEADING = "Tool Package Map"
MAP_COLUMNS = 6
_PKG_HEADING = re.compile(r"^## `([^`]+)`$")
_TOOL_HEADING = re.compile(r"^### `([^`]+)`$")
_ANCHOR = re.compile(r'^<a id="([^"]*)"></a>$')
_SOURCE = re.compile(r"^Source: \[`([^`]+)`\]\(([^)]+)\)$")


@dataclass
class _ToolDraft:
    name: str
    line: int
    text: list[str] = field(default_factory=list)
    parameters: dict[str, Any] | None = None
    source: str | None = None


@dataclass
class _PkgDraft:
    name: str
    anchor: str | None
    line: int
    tools: list[CatalogTool] = field(default_factory=list)
    note: list[str] = field(default_factory=list)
    note_line: int = 0


def _check_parameters(obj: Any, path: str, line: int) -> dict[str, Any]:
    if (
        not isinstance(obj, dict)
        or obj.get("type") != "object"
        or not isinstance(obj.get("properties"), dict)
    ):
        raise CatalogError(
            'parameters must be a JSON object schema with "type": "object" and "properties"',
            path=path,
            line=line,
        )
    req = obj.get("required", [])
    if not isinstance(req, list) or any(r not in obj["properties"] for r in req):
        raise CatalogError('"required" must list declared properties', path=path, line=line)
    return obj


def parse_catalog(text: str, path: str = "<string>") -> Catalog:
    """Parse catalog ``text``; the accepted format is in docs/inspector.md, "Internals"."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    title: str | None = None
    packages: list[CatalogPackage] = []
    map_rows: list[tuple[str, ...]] = []
    section: str = "intro"  # intro | map | package
    pkg: _PkgDraft | None = None
    tool: _ToolDraft | None = None
    pending_anchor: tuple[str, int] | None = None
    in_comment = False
    i = 0

    def err(msg: str, line: int) -> CatalogError:
        return CatalogError(msg, path=path, line=line)

    def finish_tool() -> None:
        nonlocal tool
        if tool is None or pkg is None:
            return
        if tool.parameters is None:
            raise err(f"tool `{tool.name}` has no ```json parameters block", tool.line)
        if tool.source is None:
            raise err(f"tool `{tool.name}` has no Source: line", tool.line)
        pkg.tools.append(
            CatalogTool(
                package=pkg.name,
                name=tool.name,
                description="\n".join(tool.text),
                parameters=tool.parameters,
                source=tool.source,
                line=tool.line,
            )
        )
        tool = None

    def finish_pkg() -> None:
        nonlocal pkg
        finish_tool()
        if pkg is None:
            return
        if not pkg.tools:
            raise err(f"package `{pkg.name}` has no ### tool sections", pkg.line)
        note = "\n".join(pkg.note).strip()
        packages.append(
            CatalogPackage(pkg.name, pkg.anchor, tuple(pkg.tools), note or None, pkg.line)
        )
        pkg = None

    while i < len(lines):
        raw = lines[i]
        n = i + 1
        s = raw.rstrip()
        i += 1
        if in_comment:
            if "-->" in s:
                in_comment = False
            continue
        if title is None:
            if s == "":
                continue
            if s.startswith("<!--"):
                in_comment = "-->" not in s
                continue
            if s.startswith("# "):
                title = s[2:].strip()
                continue
            raise err("expected the '# ' title (optionally after an HTML comment)", n)
        if pending_anchor is not None and s != "" and not s.startswith("## "):
            raise err("an anchor must be followed by a ## package heading", pending_anchor[1])
        if s.startswith("####"):
            raise err("unexpected '####' heading: the catalog uses only ##/### headings", n)
        if s.startswith("```"):
            if s != "```json":
                raise err(f"unexpected fence {s!r}: every block must open with ```json", n)
            if tool is None:
                raise err("```json block outside a ### tool section", n)
            if tool.parameters is not None:
                raise err(f"second ```json block in tool `{tool.name}`", n)
            body: list[str] = []
            while i < len(lines) and lines[i].rstrip() != "```":
                body.append(lines[i])
                i += 1
            if i >= len(lines):
                raise err("unclosed ```json block", n)
            i += 1  # the closing fence
            try:
                obj = json.loads("\n".join(body))
            except json.JSONDecodeError as exc:
                raise err(f"invalid JSON in parameters block: {exc.msg}", n + exc.lineno) from None
            tool.parameters = _check_parameters(obj, path, n)
            continue
        m = _ANCHOR.match(s)
        if m:
            pending_anchor = (m.group(1), n)
            continue
        if s.startswith("## "):
            finish_pkg()
            if s[3:].strip() == MAP_HEADING:
                section = "map"
                pending_anchor = None
                continue
            m = _PKG_HEADING.match(s)
            if not m:
                raise err("package heading must be ## `@scope/package`", n)
            section = "package"
            pkg = _PkgDraft(m.group(1), pending_anchor[0] if pending_anchor else None, n)
            pending_anchor = None
            continue
        if s.startswith("### "):
            if pkg is None:
                raise err("### tool section outside a ## package section", n)
            if pkg.note:
                raise err(
                    "text between tools: a package note may only follow its last tool",
                    pkg.note_line,
                )
            finish_tool()
            m = _TOOL_HEADING.match(s)
            if not m:
                raise err("tool heading must be ### `name`", n)
            tool = _ToolDraft(m.group(1), n)
            continue
        if s.startswith("#"):
            raise err("unexpected heading", n)
        if section == "map":
            if s.startswith("|"):
                cells = tuple(c.strip() for c in s.strip("|").split("|"))
                if len(cells) != MAP_COLUMNS:
                    raise err(
                        f"package map row has {len(cells)} columns, expected {MAP_COLUMNS}", n
                    )
                if not all(re.fullmatch(r":?-+:?", c) for c in cells):
                    map_rows.append(cells)
            continue
        if section != "package" or s == "":
            continue
        assert pkg is not None
        ms = _SOURCE.match(s)
        if s.startswith("Source:"):
            if tool is None:
                raise err("Source: line outside a tool section", n)
            if not ms:
                raise err("Source: line must be Source: [`path`](link)", n)
            if tool.parameters is None:
                raise err("Source: line before the ```json block", n)
            tool.source = ms.group(1)
            continue
        if tool is not None and tool.parameters is None:
            tool.text.append(s)
        elif tool is not None and tool.source is None:
            raise err("text between the ```json block and the Source: line", n)
        else:
            finish_tool()
            if not pkg.note:
                pkg.note_line = n
            pkg.note.append(s)
    if in_comment:
        raise err("unclosed HTML comment", len(lines))
    if title is None:
        raise err("empty catalog: no '# ' title", 1)
    if pending_anchor is not None:
        raise err("an anchor must be followed by a ## package heading", pending_anchor[1])
    finish_pkg()
    if map_rows and map_rows[0][0].lower().startswith("tool package"):
        map_rows = map_rows[1:]  # the header row
    return Catalog(path=path, title=title, packages=tuple(packages), map_rows=tuple(map_rows))


def load_catalog(path: str | Path) -> Catalog:
    """Read and parse a catalog file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise InvalidArgument(f"cannot read catalog {str(p)!r}: {exc.strerror or exc}") from None
    return parse_catalog(text, str(p))


#: The configuration the harness's catalog generator boots for dsh-tool-bash:
#: the unconfined local executor with default config.
CATALOG_CONFIG = Config(background=True, sandbox=None)


def catalog_view(catalog: Catalog) -> SchemaView:
    """The catalog as a :class:`SchemaView` (source ``catalog``) for its config.

    ``tools`` are dsh-tool-bash's and dsh-tool-jobs' entries, ``related`` the
    dsh-tool-bash-persistent ``bash``.  Raises ``InvalidArgument`` when the
    catalog has no dsh-tool-bash ``bash`` entry.
    """

    def pick(pkg_name: str) -> list[Tool]:
        try:
            pkg = catalog.package(pkg_name)
        except KeyError:
            return []
        return [
            tool_from_json(
                {"name": t.name, "description": t.description, "parameters": t.parameters},
                package=pkg_name,
            )
            for t in pkg.tools
        ]

    tools = pick(BASH_PKG)
    if not any(t.name == "bash" for t in tools):
        raise InvalidArgument(f"{catalog.path}: no `bash` tool under ## `{BASH_PKG}`")
    tools = [
        dataclasses.replace(t, fragments=known_fragments(t.description)) if t.name == "bash" else t
        for t in tools
    ]
    tools += pick(JOBS_PKG)
    return SchemaView(
        config=CATALOG_CONFIG,
        source="catalog",
        version=None,
        tools=tuple(tools),
        related=tuple(pick(PERSISTENT_PKG)),
        inputs=input_statuses(CATALOG_CONFIG),
        variant=variant_of(True, False),
        notes=(f"read from {catalog.path}",),
    )


def check_drift(
    catalog: Catalog, source: str | SchemaView = "model", *, version: str | None = None
) -> Drift:
    """Compare the catalog's ``bash`` with ``source`` for the catalog's config.

    Structure is compared with :func:`~.schema_diff.diff_views`.  Texts are compared by
    SHA-256 (exact text for live, stored facts for the model).  Tool sets are
    compared only for tools the catalog lists (a catalog may omit packages).
    """
    from .schema_diff import diff_views
    from .schema_source import schema

    cview = catalog_view(catalog)
    sview = (
        source
        if isinstance(source, SchemaView)
        else schema(CATALOG_CONFIG, source, version=version)
    )
    listed = {p.name for p in catalog.packages}
    sview = dataclasses.replace(sview, tools=tuple(t for t in sview.tools if t.package in listed))
    d = diff_views(cview, sview, tool="bash")
    cbash, sbash = cview.bash, sview.bash
    mismatches: list[str] = []
    notes: list[str] = []
    if not cbash.fragments:
        notes.append("the catalog's bash description is not made of known fragments")
    sfacts = sbash.description_facts
    if sfacts is None:
        notes.append("the source does not know the description's size or hash")
    elif sfacts.sha256 != text_fact(cbash.description).sha256:
        mismatches.append("description")
    for p in cbash.params:
        try:
            q = sbash.param(p.name)
        except KeyError:
            continue  # a parameter the source lacks is already in the structural diff
        if q.text is None or p.text is None:
            notes.append(f"param {p.name}: text hash unknown on one side")
        elif q.text.sha256 != p.text.sha256:
            mismatches.append(f"param:{p.name}")
    return Drift(
        catalog_path=catalog.path,
        source=sview.source,
        config=CATALOG_CONFIG,
        diff=d,
        text_mismatches=tuple(mismatches),
        notes=tuple(notes),
    )


def render_catalog(title: str, packages: list[tuple[str, list[dict[str, Any]], str | None]]) -> str:
    """Render tools in the catalog format (the inverse of :func:`parse_catalog`).

    ``packages`` is ``[(package name, [{name, description, parameters}], note)]``.
    Used to round-trip live schemas through the reader at run time (never to
    store harness texts).
    """
    out = [f"# {title}", ""]
    for name, tools, note in packages:
        slug = re.sub(r"[^a-z0-9 -]", "", name.lower()).replace(" ", "-")
        out += [f'<a id="{slug}"></a>', "", f"## `{name}`", ""]
        for t in sorted(tools, key=lambda t: t["name"]):
            out += [f"### `{t['name']}`", ""]
            if t["description"]:
                out += [t["description"], ""]
            out += ["```json", json.dumps(t["parameters"], indent=2, ensure_ascii=False), "```", ""]
            src = f"packages/{name.split('/')[-1]}/src/index.ts"
            out += [f"Source: [`{src}`](../{src})", ""]
        if note:
            out += [note, ""]
    return "\n".join(out)
