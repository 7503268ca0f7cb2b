"""The inspector's sections, derived from harness values: pure functions, no state.

Each takes the controls and the harness's answers and returns one part of the view.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from typing import Any

from ..errors import DshError
from ..harness import (
    ERAS,
    ESCALATION_TARGETS,
    WIDER_MODES,
    Config,
    Fragment,
    LiveStatus,
    Matrix,
    ParamChange,
    SchemaDiff,
    SchemaView,
    Tool,
    era_info,
    estimate_tokens,
    tool_size,
)
from .inspector_backend import HarnessBackend
from .inspector_controls import Controls, EscalationInputs
from .inspector_view import (
    Badge,
    DescriptionView,
    EscalationView,
    FragmentRow,
    JsonLine,
    MatrixRowView,
    MatrixView,
    ParamRow,
    TargetRow,
    ToolRow,
)

FRAGMENT_TITLES = {
    "base": "base",
    "background-on": "background on",
    "background-off": "background off",
    "escalation": "escalation guidance",
}

CATEGORY_HEADLINES = {
    "granted": "granted for this one call",
    "not-requested": "no escalation: neither field is set, the call runs in the standing mode",
    "invalid-args": "refused: the arguments are invalid",
    "not-wider": "refused: not strictly wider than the standing mode",
    "no-approver": "refused: no approval service is composed",
    "no-agent": "refused: the call has no agent to route the approval through",
    "rejected": "refused: the approver rejected it",
    "cancelled": "refused: the approval was cancelled",
    "unavailable": "refused: no approval channel answered",
    "unknown": "unrecognised result (a package version this inspector does not know?)",
}


def pretty_json(tool: Tool) -> str:
    """The model-visible ``{name, description, parameters}``, indented for reading."""
    return json.dumps(tool.model_json(), indent=2, ensure_ascii=False)


def json_lines(base: str, cur: str) -> tuple[JsonLine, ...]:
    """``cur`` line by line, with the lines of ``base`` it lacks marked removed."""
    a, b = base.splitlines(), cur.splitlines()
    out: list[JsonLine] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.extend(JsonLine("same", t) for t in b[j1:j2])
            continue
        out.extend(JsonLine("removed", t) for t in a[i1:i2])
        out.extend(JsonLine("added", t) for t in b[j1:j2])
    return tuple(out)


def _change_text(c: ParamChange) -> str:
    if c.facet == "type":
        return f"type {c.before} → {c.after}"
    if c.facet == "enum":
        return "enum changed"
    if c.facet == "required":
        return "required" if c.after else "optional"
    return f"position {c.before + 1} → {c.after + 1}"


def param_rows(view: SchemaView, d: SchemaDiff) -> tuple[ParamRow, ...]:
    """The bash parameters of ``view``, each marked by ``d``, the harness's own
    diff from the baseline (so the widget and ``harness.diff`` can never
    disagree); removed rows go where they stood in the baseline."""
    added = {p.name for p in d.added}
    changes: dict[str, list[str]] = {}
    for c in d.changed:
        changes.setdefault(c.name, []).append(_change_text(c))
    for name in d.texts_changed:
        how = "compared exactly" if d.texts_compared == "exact" else "by SHA-256"
        changes.setdefault(name, []).append(f"description text differs ({how})")
    rows: list[ParamRow] = []
    for p in view.bash.params:
        found = changes.get(p.name, [])
        status = "added" if p.name in added else ("changed" if found else "same")
        rows.append(
            ParamRow(
                p.name, p.type, p.enum, p.required, status, tuple(found),
                p.description, p.description_is_summary,
            )
        )  # fmt: skip
    for bp in d.removed:
        removed = ParamRow(
            bp.name, bp.type, bp.enum, bp.required, "removed", (),
            bp.description, bp.description_is_summary,
        )  # fmt: skip
        rows.insert(min(bp.position, len(rows)), removed)
    return tuple(rows)


def _fragment_size(text: str | None, facts: Any) -> tuple[int | None, int | None]:
    if text is not None:
        return len(text), estimate_tokens(text)
    if facts is not None:
        return facts.length, facts.tokens
    return None, None


def _description_size(tool: Tool) -> tuple[int | None, int | None]:
    if not tool.description_is_summary:
        return len(tool.description), estimate_tokens(tool.description)
    f = tool.description_facts
    return (f.length, f.tokens) if f is not None else (None, None)


def tool_rows(tools: tuple[Tool, ...]) -> tuple[ToolRow, ...]:
    """Name, package and parameter names of each tool (the era pane's table)."""
    return tuple(ToolRow(t.name, t.package, t.param_names) for t in tools)


def badge(
    c: Controls,
    source: str,
    backend: HarnessBackend,
    era_live: dict[str, LiveStatus | None],
    live: LiveStatus | None,
) -> Badge:
    """Which source answered and why: ``era_live`` holds each covered era's bridge
    state, ``live`` the primary bridge's (for eras no bridge covers)."""
    covered = backend.live_covers(c.era)
    st = era_live.get(c.era) if covered else live
    pkg = "@deepseek-ai/dsh-tool-bash"
    if source == "live":
        version = st.version if st else backend.version
        return Badge("live", c.source, version, "ready", f"LIVE · {pkg}@{version} · exact texts")
    version = backend.version_for(c.era) or backend.version
    state = st.state if st is not None else "disabled"
    text = f"MODEL · facts of {pkg}@{version} · our summaries, no harness prose"
    detail = ""
    if c.source == "live":
        if st is None:
            detail = "live is disabled for this inspector"
        elif st.state in ("idle", "installing", "booting"):
            what = {"idle": "starting", "installing": "installing", "booting": "booting"}[st.state]
            detail = f"live is loading ({what}{': ' + st.message if st.message else ''})…"
        elif st.state == "unavailable":
            detail = f"live unavailable: {first_line(st.message)}"
        elif not covered:
            live_eras = ", ".join(
                f"{e.key} ({e.published})" for e in map(era_info, ERAS) if e.published
            )
            detail = (
                f"live has exact texts only for eras with a published package ({live_eras}); "
                "this era comes from the model"
            )
    elif st is not None and st.state == "ready":
        detail = "live is ready; pick live for the exact texts"
    elif st is not None and st.state == "idle" and not st.installed:
        detail = (
            "live is not installed; pick live to install the published packages "
            "in the background (or run: python -m dsh_magics.harness.bridge install)"
        )
    elif st is not None and st.state == "unavailable":
        detail = f"live unavailable: {first_line(st.message)}"
    return Badge("model", c.source, version, state, text, detail)


def _fragment_row(f: Fragment, status: str) -> FragmentRow:
    """One description fragment's row, with its size (``status``: added,
    changed, same or removed against the base tool)."""
    chars, tokens = _fragment_size(f.text, f.facts)
    return FragmentRow(f.key, FRAGMENT_TITLES.get(f.key, f.key), f.summary, f.text, chars, tokens, status)


def description_view(cur: Tool, base: Tool, changed: tuple[str, ...]) -> DescriptionView:
    """The description fragments of ``cur`` against ``base`` (``changed``: the
    fragment keys whose text differs), with sizes."""
    base_keys = {f.key for f in base.fragments}
    cur_keys = {f.key for f in cur.fragments}
    rows = [
        _fragment_row(f, "added" if f.key not in base_keys else "changed" if f.key in changed else "same")
        for f in cur.fragments
    ]
    rows += [_fragment_row(f, "removed") for f in base.fragments if f.key not in cur_keys]
    chars, tokens = _description_size(cur)
    bchars, btokens = _description_size(base)
    tchars, ttokens = tool_size(cur)
    btchars, bttokens = tool_size(base)
    return DescriptionView(
        tuple(rows), not cur.description_is_summary, chars, tokens, bchars, btokens,
        tchars, ttokens, btchars, bttokens,
    )  # fmt: skip


def matrix_view(m: Matrix, cfg: Config) -> MatrixView:
    """The matrix with exactly one row marked as ``cfg`` (inputs the era lacks match any)."""
    not_applicable = {i.name for i in m.inputs if not i.applicable}
    rows = []
    for r in m.rows:
        rc = r.config
        same_bg = "enable_run_in_background" in not_applicable or rc.background == cfg.background
        same_sb = "sandbox" in not_applicable or rc.sandbox == cfg.sandbox
        rows.append(
            MatrixRowView(
                label=rc.label(), background=rc.background, sandbox=rc.sandbox,
                variant=r.variant, cells=tuple(col in r.params for col in m.columns),
                schema_id=r.schema_id, chars=r.chars, tokens=r.tokens,
                current=same_bg and same_sb, load_error=r.load_error,
            )
        )  # fmt: skip
    # Exactly one row is "current": the first match (collapsed eras have one row).
    seen = False
    fixed = []
    for row in rows:
        if row.current and seen:
            row = dataclasses.replace(row, current=False)
        seen = seen or row.current
        fixed.append(row)
    notes = tuple(f"{i.name}: {i.note}" for i in m.inputs if not i.applicable)
    return MatrixView(m.source, m.era, m.columns, tuple(fixed), m.distinct, notes)


def escalation_view(
    backend: HarnessBackend, esc: EscalationInputs, view: SchemaView, esc_source: str
) -> EscalationView:
    """Run the simulator's chain from ``esc_source`` and say what it means under ``view``."""
    advertised = "sandbox_permissions" in view.bash.param_names
    targets = tuple(TargetRow(t, t in WIDER_MODES.get(esc.mode, ())) for t in ESCALATION_TARGETS)
    notes: list[str] = []
    if not any(t.reachable for t in targets):
        notes.append(
            f"Under {esc.mode} the enum still advertises {len(targets)} targets "
            f"({', '.join(ESCALATION_TARGETS)}), and neither can ever succeed: "
            "no mode is strictly wider than this one."
        )
    if not advertised:
        notes.append(
            "The current configuration does not advertise sandbox_permissions "
            "(no confining executor in this composition, or an era without escalation); "
            "the simulator shows what a confining executor would do."
        )
    try:
        r = backend.escalate(esc.to_request(), esc_source)
    except DshError as exc:
        return EscalationView(
            esc, esc_source, "error", f"error ({exc.code})", None, (), exc.message, False,
            targets, advertised, tuple(notes), error=exc.message,
        )  # fmt: skip
    return EscalationView(
        inputs=esc,
        source=r.source,
        category=r.category,
        headline=CATEGORY_HEADLINES.get(r.category, r.category)
        + (f" ({r.granted_mode})" if r.granted_mode else ""),
        granted_mode=r.granted_mode,
        steps=r.steps,
        message=r.message,
        message_is_summary=r.message_is_summary,
        targets=targets,
        advertised=advertised,
        notes=tuple(notes),
    )


def first_line(message: str) -> str:
    """A failure is one line in the badge (npm's output tail stays in the status)."""
    lines = message.strip().splitlines()
    return lines[0].rstrip(":") if lines else message
