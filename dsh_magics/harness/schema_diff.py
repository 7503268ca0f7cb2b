"""Differences between two schema views (any configs, any sources).

Parameters match by name; type, enum, required and position are compared (a move is a change).
"""

from __future__ import annotations

from .comparison_types import ParamChange, SchemaDiff
from .schema_types import Config, SchemaView, Tool
from .tokens import tool_size


def _label(view: SchemaView) -> str:
    return f"{view.source}:{view.config.label()}"


def _as_view(x: SchemaView | Config) -> SchemaView:
    if isinstance(x, SchemaView):
        return x
    from .model import model_view

    return model_view(x)


def diff_views(a: SchemaView | Config, b: SchemaView | Config, *, tool: str = "bash") -> SchemaDiff:
    """``b`` relative to ``a`` for ``tool`` (missing tool = empty side)."""
    va, vb = _as_view(a), _as_view(b)
    ta = next((t for t in va.tools if t.name == tool), None)
    tb = next((t for t in vb.tools if t.name == tool), None)
    pa = {p.name: p for p in ta.params} if ta else {}
    pb = {p.name: p for p in tb.params} if tb else {}
    changed: list[ParamChange] = []
    for name, p in pa.items():
        q = pb.get(name)
        if q is None:
            continue
        if p.type != q.type:
            changed.append(ParamChange(name, "type", p.type, q.type))
        if p.enum != q.enum:
            changed.append(
                ParamChange(
                    name, "enum", list(p.enum) if p.enum else None, list(q.enum) if q.enum else None
                )
            )
        if p.required != q.required:
            changed.append(ParamChange(name, "required", p.required, q.required))
        if p.position != q.position:
            changed.append(ParamChange(name, "position", p.position, q.position))
    fa = [f.key for f in ta.fragments] if ta else []
    fb = [f.key for f in tb.fragments] if tb else []
    if ta and tb and not (fa and fb):
        fa = fb = []  # one side's fragments are unknown: nothing to compare
    ca, ka = tool_size(ta) if ta else (0, 0)
    cb, kb = tool_size(tb) if tb else (0, 0)
    names_a, names_b = va.tool_names, vb.tool_names
    frag_changed, texts_changed, compared = _text_changes(ta, tb)
    return SchemaDiff(
        a_label=_label(va),
        b_label=_label(vb),
        tool=tool,
        added=tuple(p for n, p in pb.items() if n not in pa),
        removed=tuple(p for n, p in pa.items() if n not in pb),
        changed=tuple(changed),
        fragments_added=tuple(k for k in fb if k not in fa),
        fragments_removed=tuple(k for k in fa if k not in fb),
        tools_added=tuple(n for n in names_b if n not in names_a),
        tools_removed=tuple(n for n in names_a if n not in names_b),
        chars_a=ca,
        chars_b=cb,
        tokens_a=ka,
        tokens_b=kb,
        fragments_changed=frag_changed,
        texts_changed=texts_changed,
        texts_compared=compared,
    )


def _text_changes(ta: Tool | None, tb: Tool | None) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """Fragments and parameter texts that differ, compared exactly when both
    sides carry the texts (live), else by their SHA-256 facts."""
    if ta is None or tb is None:
        return (), (), "no"
    fb = {f.key: f for f in tb.fragments}
    pb = {p.name: p for p in tb.params}
    pairs = [(f, fb[f.key]) for f in ta.fragments if f.key in fb]
    ppairs = [(p, pb[p.name]) for p in ta.params if p.name in pb]
    if not pairs or any(f.facts is None or g.facts is None for f, g in pairs):
        return (), (), "no"
    if any(p.text is None or q.text is None for p, q in ppairs):
        return (), (), "no"
    exact = not (ta.description_is_summary or tb.description_is_summary) and all(
        f.text is not None and g.text is not None for f, g in pairs
    )
    if exact:
        frags = tuple(f.key for f, g in pairs if f.text != g.text)
        params = tuple(p.name for p, q in ppairs if p.description != q.description)
        return frags, params, "exact"
    frags = tuple(f.key for f, g in pairs if f.facts != g.facts)
    params = tuple(p.name for p, q in ppairs if p.text != q.text)
    return frags, params, "sha256"
