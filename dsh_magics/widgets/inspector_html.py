"""HTML and plain-text renderings of an :class:`~.inspector_view.InspectorView`.

One renderer for the widget's panes and the static fallback, so the two never disagree.
"""

from __future__ import annotations

from html import escape

from ..notebook.render import LITERAL
from .inspector_view import (
    DescriptionView,
    EraView,
    EscalationView,
    InspectorView,
    JsonView,
    MatrixView,
    ParamTable,
)

CSS = """
<style>
.dsh-insp { font-family: var(--jp-ui-font-family, sans-serif); font-size: 13px; }
.dsh-insp table { border-collapse: collapse; margin: 4px 0 8px 0; }
.dsh-insp th, .dsh-insp td { border: 1px solid #ccc; padding: 2px 6px; text-align: left !important; vertical-align: top; }
.dsh-insp th { background: #f3f3f3; }
.dsh-insp .dsh-added, .dsh-insp .dsh-line-added { background: #e3f7e3; }
.dsh-insp .dsh-removed, .dsh-insp .dsh-line-removed { background: #fbe4e4; color: #7a2020; }
.dsh-insp .dsh-changed { background: #fff6d8; }
.dsh-insp .dsh-current { background: #e4efff; font-weight: bold; }
.dsh-insp .dsh-badge { display: inline-block; padding: 2px 8px; border-radius: 10px; font-weight: bold; }
.dsh-insp .dsh-src-live { background: #1f7a3a; color: white; }
.dsh-insp .dsh-src-model { background: #5a5a7a; color: white; }
.dsh-insp .dsh-note { color: #666; font-style: italic; }
.dsh-insp .dsh-warn { background: #fff3cd; border-left: 4px solid #e0a800; padding: 4px 8px; }
.dsh-insp pre.dsh-json { background: #fafafa; border: 1px solid #ddd; padding: 4px; white-space: pre-wrap; font-size: 12px; }
.dsh-insp .dsh-frag { border-radius: 3px; padding: 0 2px; }
.dsh-insp .dsh-frag-base { background: #eef3ff; }
.dsh-insp .dsh-frag-background-on, .dsh-insp .dsh-frag-background-off { background: #eafbea; }
.dsh-insp .dsh-frag-escalation { background: #fff0e0; }
.dsh-insp .dsh-frag-label { font-size: 10px; color: #555; font-weight: bold; }
.dsh-insp .dsh-pass { color: #1f7a3a; } .dsh-insp .dsh-fail { color: #b00020; }
.dsh-insp .dsh-result { font-size: 14px; font-weight: bold; margin: 6px 0; }
.dsh-insp [data-message-source] code { white-space: pre-wrap; }
.dsh-insp .dsh-nowrap { white-space: nowrap; }
</style>
"""

#: Inputs the inspector has controls for (others, e.g. sandbox_policy, are fixed).
CONTROL_INPUTS = ("enable_run_in_background", "sandbox")

SIGN = {"added": "+", "removed": "−", "changed": "~", "same": ""}


def _num(n: int | None) -> str:
    return "unknown" if n is None else f"{n:,}"


def _delta(n: int | None) -> str:
    if n is None:
        return "unknown"
    return f"{n:+,}" if n else "±0"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _yes(flag: bool) -> str:
    return "yes" if flag else ""


# ----------------------------------------------------------------------------- sections
def badge_html(view: InspectorView) -> str:
    b = view.badge
    detail = f' <span class="dsh-note">{escape(b.detail)}</span>' if b.detail else ""
    loading = ' data-loading="1"' if b.loading else ""
    return (
        f'<div class="dsh-insp {LITERAL}"><span class="dsh-badge dsh-src-{b.source}" data-source="{b.source}"'
        f' data-version="{escape(b.version)}"{loading}>{escape(b.text)}</span>{detail}</div>'
    )


def config_html(view: InspectorView) -> str:
    variant = f" · variant {view.variant}" if view.variant else ""
    parts = [
        f"<div><b>Configuration:</b> {escape(view.config_label)}{variant}"
        f" · <b>baseline:</b> {escape(view.baseline_label)}</div>"
    ]
    for i in view.inputs:
        if not i.applicable and i.name in CONTROL_INPUTS:
            parts.append(
                f'<div class="dsh-note">not applicable here: {escape(i.name)} — {escape(i.note)}</div>'
            )
    for n in view.notes:
        parts.append(f'<div class="dsh-note">{escape(n)}</div>')
    return "\n".join(parts)


def params_html(t: ParamTable) -> str:
    rows = []
    for r in t.rows:
        sign = SIGN[r.status]
        name = escape(r.name)
        if r.status == "added":
            name = f"<ins>{name}</ins>"
        elif r.status == "removed":
            name = f"<del>{name}</del>"
        enum = ", ".join(r.enum) if r.enum else ""
        note = (
            f' <span class="dsh-note">({escape("; ".join(r.changes))})</span>' if r.changes else ""
        )
        rows.append(
            f'<tr class="dsh-param dsh-{r.status}" data-param="{escape(r.name)}" data-status="{r.status}">'
            f"<td>{sign}</td><td><code>{name}</code>{note}</td><td>{escape(r.type)}</td>"
            f"<td>{escape(enum)}</td><td>{_yes(r.required)}</td></tr>"
        )
    return (
        f'<table class="dsh-params" data-tool="{escape(t.tool)}">'
        "<tr><th></th><th>parameter</th><th>type</th><th>enum</th><th>required</th></tr>"
        + "".join(rows)
        + f'</table><div class="dsh-note">+ added, − removed, ~ changed, against: {escape(t.baseline)}</div>'
    )


def sizes_html(d: DescriptionView) -> str:
    return (
        '<table class="dsh-sizes"><tr><th></th><th>chars</th><th>≈ tokens</th>'
        "<th>Δ chars</th><th>Δ ≈ tokens</th></tr>"
        f"<tr><td>description</td><td>{_num(d.chars)}</td><td>{_num(d.tokens)}</td>"
        f'<td data-delta="desc-chars">{_delta(d.delta_chars)}</td><td>{_delta(d.delta_tokens)}</td></tr>'
        f"<tr><td>whole tool as the model sees it</td><td>{_num(d.tool_chars)}</td><td>{_num(d.tool_tokens)}</td>"
        f'<td data-delta="tool-chars">{_delta(d.tool_delta_chars)}</td><td>{_delta(d.tool_delta_tokens)}</td></tr>'
        "</table>"
    )


def description_html(d: DescriptionView) -> str:
    parts = [sizes_html(d)]
    present = [f for f in d.fragments if f.status != "removed"]
    if d.exact:
        spans = []
        for f in present:
            sign = {"added": "+ ", "changed": "~ "}.get(f.status, "")
            spans.append(
                f'<mark class="dsh-frag dsh-frag-{f.key}" data-fragment="{f.key}" data-status="{f.status}">'
                f'<span class="dsh-frag-label">[{sign}{escape(f.title)}]</span> {escape(f.text or "")}</mark>'
            )
        parts.append(
            '<div class="dsh-desc" data-exact="1"><b>Exact description</b> (fragments marked):<br>'
            + "".join(spans)
            + "</div>"
        )
    else:
        parts.append(
            '<div class="dsh-note">Model source: the harness text is not stored here; each fragment '
            "is described in our own words (labelled [summary]) with the exact text's size.</div>"
        )
    rows = []
    for f in d.fragments:
        rows.append(
            f'<tr class="dsh-{f.status}" data-fragment="{f.key}" data-status="{f.status}">'
            f"<td>{SIGN[f.status]}</td><td>{escape(f.title)}</td><td>{escape(f.summary)}</td>"
            f"<td>{_num(f.chars)}</td><td>{_num(f.tokens)}</td></tr>"
        )
    parts.append(
        '<table class="dsh-fragments"><tr><th></th><th>fragment</th><th>what it says (our summary)</th>'
        "<th>chars</th><th>≈ tokens</th></tr>" + "".join(rows) + "</table>"
    )
    return "\n".join(parts)


def json_html(j: JsonView) -> str:
    lines = []
    for line in j.lines:
        sign = {"added": "+ ", "removed": "- ", "same": "  "}[line.status]
        lines.append(
            f'<span class="dsh-line dsh-line-{line.status}">{sign}{escape(line.text)}</span>'
        )
    note = (
        '<div class="dsh-note">Model source: description strings are our labelled summaries; '
        "structure, order and keys are exact.</div>"
        if j.descriptions_are_summaries
        else '<div class="dsh-note">Exact JSON from the published package.</div>'
    )
    return note + '<pre class="dsh-json">' + "\n".join(lines) + "</pre>"


def matrix_html(m: MatrixView) -> str:
    head = "".join(f"<th><code>{escape(c)}</code></th>" for c in m.columns)
    rows = []
    for r in m.rows:
        mark = "▶" if r.current else ""
        label = f"<strong>{escape(r.label)}</strong>" if r.current else escape(r.label)
        if r.load_error:
            cells = f'<td colspan="{len(m.columns)}">load error: {escape(r.load_error)}</td>'
        else:
            cells = "".join(f"<td>{'✓' if c else '·'}</td>" for c in r.cells)
        cls = "dsh-current" if r.current else ""
        rows.append(
            f'<tr class="{cls}" data-current="{int(r.current)}" data-config="{escape(r.label)}">'
            f'<td>{mark}</td><td class="dsh-nowrap">{label}</td><td>{escape(r.variant or "")}</td>{cells}'
            f"<td>{_num(r.chars)}</td><td>{_num(r.tokens)}</td><td><code>{escape(r.schema_id)}</code></td></tr>"
        )
    notes = "".join(f'<div class="dsh-note">{escape(n)}</div>' for n in m.notes)
    return (
        f"<div>{_count(len(m.rows), 'configuration')}, <b>{_count(m.distinct, 'distinct schema')}</b> "
        f"({escape(m.source)}, era {escape(m.era)}); ▶ marks the current one.</div>"
        f'<table class="dsh-matrix"><tr><th></th><th>configuration</th><th>variant</th>{head}'
        f"<th>chars</th><th>≈ tokens</th><th>schema id</th></tr>"
        + "".join(rows)
        + "</table>"
        + notes
    )


def eras_html(e: EraView) -> str:
    rows = []
    for info in e.eras:
        cur = info.key == e.era.key
        rows.append(
            f'<tr class="{"dsh-current" if cur else ""}" data-era="{escape(info.key)}">'
            f"<td>{'▶' if cur else ''}</td><td>{escape(info.key)}</td><td>{'yes' if info.shipped else 'no'}</td>"
            f'<td data-texts="{escape(info.texts)}">{escape(info.texts)}</td>'
            f"<td>{escape(', '.join(info.tools))}</td><td>{escape(info.summary)}</td></tr>"
        )
    tools = "".join(
        f'<tr data-tool="{escape(t.name)}"><td><code>{escape(t.name)}</code></td><td>{escape(t.package)}</td>'
        f"<td>{escape(', '.join(t.params))}</td></tr>"
        for t in e.tools
    )
    related = "".join(
        f"<tr><td><code>{escape(t.name)}</code></td><td>{escape(t.package)}</td>"
        f"<td>{escape(', '.join(t.params))}</td></tr>"
        for t in e.related
    )
    out = (
        f"<div><b>Tool set of {escape(e.era.title)}:</b> "
        f'<span data-era-tools="1">{escape(", ".join(e.tool_names))}</span></div>'
        f'<table class="dsh-tools"><tr><th>tool</th><th>package</th><th>parameters</th></tr>{tools}</table>'
    )
    if related:
        out += (
            "<div>Related tools outside this composition:</div>"
            f'<table class="dsh-related"><tr><th>tool</th><th>package</th><th>parameters</th></tr>{related}</table>'
        )
    out += (
        '<table class="dsh-eras"><tr><th></th><th>era</th><th>shipped</th><th>texts</th>'
        "<th>tools</th><th>what changed (our summary)</th></tr>" + "".join(rows) + "</table>"
    )
    return out


def escalation_html(x: EscalationView) -> str:
    i = x.inputs
    req = i.request or "(absent)"
    just = "(absent)" if i.justification == "" else repr(i.justification)
    head = (
        f"<div>standing mode <b>{escape(i.mode)}</b>, sandbox_permissions <b>{escape(req)}</b>, "
        f"justification {escape(just)}, approver {'present' if i.approver else 'absent'}, "
        f"agent {'present' if i.agent else 'absent'}, policy <b>{escape(i.policy)}</b>, "
        f"approver answers <b>{escape(i.outcome)}</b></div>"
    )
    targets = "".join(
        f'<tr data-target="{t.target}" data-reachable="{int(t.reachable)}"><td><code>{t.target}</code></td>'
        f"<td>{'✔ strictly wider' if t.reachable else '✘ not wider: can never succeed'}</td></tr>"
        for t in x.targets
    )
    targets_tbl = (
        '<table class="dsh-targets"><tr><th>enum target</th><th>from the standing mode</th></tr>'
        f"{targets}</table>"
    )
    warn = "".join(f'<div class="dsh-warn">{escape(n)}</div>' for n in x.notes)
    steps = []
    for s in x.steps:
        mark, cls = (
            ("✔", "dsh-pass")
            if s.passed
            else ("–", "dsh-note")
            if s.passed is None
            else ("✘", "dsh-fail")
        )
        state = "passed" if s.passed else "not reached" if s.passed is None else "failed"
        steps.append(
            f'<li class="{cls}" data-step="{escape(s.key)}" data-passed="{state}">{mark} '
            f"<b>{escape(s.title)}</b> — {state}"
            + (f'<span class="dsh-note"> · {escape(s.detail)}</span>' if s.detail else "")
            + "</li>"
        )
    result_cls = "dsh-pass" if x.granted else "dsh-fail"
    result = (
        f'<div class="dsh-result {result_cls}" data-category="{escape(x.category)}">'
        f"Result: {escape(x.headline)} <code>[{escape(x.category)}]</code></div>"
    )
    if x.message is not None:
        if x.message_is_summary:
            label = "Our wording (model summary, not the harness text)"
        else:
            label = "The harness's exact message (live)"
        result += (
            f'<div data-message-source="{"model" if x.message_is_summary else "live"}">'
            f"<b>{label}:</b> <code>{escape(x.message)}</code></div>"
        )
    return (
        head + targets_tbl + warn + f'<ol class="dsh-chain">{"".join(steps)}</ol>' + result
        + f'<div class="dsh-note">source: {escape(x.source)}</div>'
    )  # fmt: skip


# ----------------------------------------------------------------------------- whole
SECTIONS = (
    ("Parameters", "params"),
    ("JSON schema", "json"),
    ("Description", "description"),
    ("Matrix", "matrix"),
    ("Eras & tools", "eras"),
    ("Escalation", "escalation"),
)


def section_html(view: InspectorView, key: str) -> str:
    """One pane's HTML, wrapped so that the CSS applies inside a widget too."""
    if key == "params":
        body = config_html(view) + params_html(view.params) + sizes_html(view.description)
    elif key == "json":
        body = json_html(view.json)
    elif key == "description":
        body = description_html(view.description)
    elif key == "matrix":
        body = matrix_html(view.matrix)
    elif key == "eras":
        body = eras_html(view.eras)
    elif key == "escalation":
        body = escalation_html(view.escalation)
    elif key == "catalog":
        from .inspector_catalog import catalog_html

        body = catalog_html(view.catalog)
    else:
        raise KeyError(key)
    return f'<div class="dsh-insp {LITERAL}" data-section="{key}">{body}</div>'


def render_html(view: InspectorView) -> str:
    """The static page: badge, every section stacked (the no-widget fallback)."""
    parts = [CSS, badge_html(view)]
    keys = list(SECTIONS)
    if view.catalog is not None:
        keys.append(("Catalog", "catalog"))
    for title, key in keys:
        parts.append(f"<h4>{escape(title)}</h4>{section_html(view, key)}")
    return f'<div class="dsh-inspector-static {LITERAL}">' + "\n".join(parts) + "</div>"


# ----------------------------------------------------------------------------- text
def _table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [
        max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)
    ]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*headers), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


def text_header(view: InspectorView) -> str:
    b = view.badge
    out = [f"[{b.text}]" + (f" ({b.detail})" if b.detail else "")]
    out.append(
        f"configuration: {view.config_label}"
        + (f" (variant {view.variant})" if view.variant else "")
    )
    out.append(f"baseline: {view.baseline_label}")
    out += [
        f"not applicable: {i.name} — {i.note}"
        for i in view.inputs
        if not i.applicable and i.name in CONTROL_INPUTS
    ]
    return "\n".join(out)


def text_params(view: InspectorView) -> str:
    d = view.description
    rows = [
        [SIGN[r.status], r.name, r.type, ", ".join(r.enum or ()), _yes(r.required)]
        for r in view.params.rows
    ]
    return (
        _table(["", "parameter", "type", "enum", "required"], rows)
        + f"\nwhole tool: {_num(d.tool_chars)} chars, ≈{_num(d.tool_tokens)} tokens "
        f"(Δ {_delta(d.tool_delta_chars)} chars, {_delta(d.tool_delta_tokens)} tokens vs baseline)"
    )


def text_json(view: InspectorView) -> str:
    sign = {"added": "+ ", "removed": "- ", "same": "  "}
    return "\n".join(sign[line.status] + line.text for line in view.json.lines)


def text_description(view: InspectorView) -> str:
    d = view.description
    out = [
        f"description: {_num(d.chars)} chars, ≈{_num(d.tokens)} tokens "
        f"(Δ {_delta(d.delta_chars)} chars, {_delta(d.delta_tokens)} tokens vs baseline)"
    ]
    out += [
        f"  {SIGN[f.status] or ' '} {f.title} ({_num(f.chars)} chars, ≈{_num(f.tokens)} tokens): {f.summary}"
        for f in d.fragments
    ]
    return "\n".join(out)


def text_matrix(view: InspectorView) -> str:
    m = view.matrix
    rows = [
        [
            "▶" if r.current else "",
            r.label,
            r.variant or "",
            *("✓" if c else "·" for c in r.cells),
            _num(r.chars),
        ]
        for r in m.rows
    ]
    head = (
        f"matrix ({m.source}, era {m.era}): {_count(len(m.rows), 'configuration')}, "
        f"{_count(m.distinct, 'distinct schema')}"
    )
    notes = "".join(f"\n{n}" for n in m.notes)
    return head + "\n" + _table(["", "configuration", "variant", *m.columns, "chars"], rows) + notes


def text_eras(view: InspectorView) -> str:
    e = view.eras
    out = [f"tools in {e.era.key}: {', '.join(e.tool_names)}"]
    out += [
        f"  {'▶' if i.key == e.era.key else ' '} {i.key}: {', '.join(i.tools)} [{i.texts}]"
        for i in e.eras
    ]
    return "\n".join(out)


def text_escalation(view: InspectorView) -> str:
    x = view.escalation
    out = [f"escalation ({x.source}): {x.headline} [{x.category}]"]
    out += [f"  {'✔' if s.passed else '–' if s.passed is None else '✘'} {s.title}" for s in x.steps]
    out += [f"  ! {n}" for n in x.notes]
    if x.message is not None:
        label = "our wording" if x.message_is_summary else "harness message"
        out.append(f"  {label}: {x.message}")
    return "\n".join(out)


def text_catalog(view: InspectorView) -> str:
    from .inspector_catalog import catalog_text

    return catalog_text(view.catalog)


TEXT_SECTIONS = {
    "params": text_params,
    "json": text_json,
    "description": text_description,
    "matrix": text_matrix,
    "eras": text_eras,
    "escalation": text_escalation,
    "catalog": text_catalog,
}


def render_text(view: InspectorView) -> str:
    """Plain-text rendering for terminals (plain IPython) and ``text/plain``."""
    keys = ["params", "description", "matrix", "eras", "escalation"]
    if view.catalog is not None:
        keys.append("catalog")
    return "\n\n".join([text_header(view), *(TEXT_SECTIONS[k](view) for k in keys)])
