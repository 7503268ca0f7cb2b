"""The inspector's view-model: control values in, plain view data out.

Pure and non-blocking, so tests read the view directly and the static fallback shows the same.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import threading
from dataclasses import dataclass
from typing import Any

from ..errors import DshError, InvalidArgument
from ..harness import (
    CURRENT_ERA,
    ERAS,
    ESCALATION_TARGETS,
    OUTCOMES,
    POLICIES,
    SANDBOX_MODES,
    WIDER_MODES,
    ChainStep,
    Config,
    EraInfo,
    EscalationRequest,
    InputStatus,
    LiveStatus,
    ParamChange,
    SchemaDiff,
    SchemaView,
    Tool,
    era_info,
    estimate_tokens,
    tool_size,
)
from ..harness.schema_diff import diff_views
from .inspector_backend import HarnessBackend

SOURCES = ("live", "model")
CUSTOM = "custom"
CONFINED = ("read-only", "workspace-write", "danger-full-access")

#: Baselines the user can compare against, besides the presets themselves.
EXTRA_BASELINES: dict[str, tuple[str, bool, str | None]] = {
    "no-background": ("enableRunInBackground off, unconfined", False, None),
    "no-background-confined": (
        "enableRunInBackground off, confining executor",
        False,
        "workspace-write",
    ),
}
#: Same background/sandbox as the current controls, in the current era.
CURRENT_ERA_BASELINE = "current-era"

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


# --------------------------------------------------------------------------- inputs
@dataclass(frozen=True)
class Controls:
    """The schema controls.  ``source`` is what the user asked for."""

    source: str = "model"
    era: str = CURRENT_ERA
    background: bool = True
    sandbox: str | None = None
    preset: str = "catalog-default"  # or CUSTOM
    baseline: str = "catalog-default"

    def config(self) -> Config:
        return Config(background=self.background, sandbox=self.sandbox, era=self.era)  # type: ignore[arg-type]


@dataclass(frozen=True)
class EscalationInputs:
    """The escalation simulator's inputs (our default justification is our own words)."""

    mode: str = "read-only"
    request: str | None = "workspace-write"
    justification: str = "The build has to write its output into the workspace."
    outcome: str = "allowed-once"
    approver: bool = True
    agent: bool = True
    policy: str = "ask"

    def request_obj(self) -> EscalationRequest:
        return EscalationRequest(
            mode=self.mode,  # type: ignore[arg-type]
            request=self.request,
            # "" is an absent field; whitespace is a blank (invalid) justification.
            justification=self.justification if self.justification != "" else None,
            outcome=self.outcome,  # type: ignore[arg-type]
            approver=self.approver,
            agent=self.agent,
            policy=self.policy,  # type: ignore[arg-type]
        )


# --------------------------------------------------------------------------- outputs
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


# --------------------------------------------------------------------------- helpers
def _pretty(tool: Tool) -> str:
    return json.dumps(tool.model_json(), indent=2, ensure_ascii=False)


def _json_lines(base: str, cur: str) -> tuple[JsonLine, ...]:
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


def _param_rows(view: SchemaView, d: SchemaDiff) -> tuple[ParamRow, ...]:
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


def _tool_rows(tools: tuple[Tool, ...]) -> tuple[ToolRow, ...]:
    return tuple(ToolRow(t.name, t.package, t.param_names) for t in tools)


# --------------------------------------------------------------------------- the state
class InspectorState:
    """Control values plus the computation of the :class:`InspectorView` they imply.

    Thread-safe: the widget calls :meth:`update` from the kernel thread and
    :meth:`set_live_status` from the bridge's worker thread.
    """

    def __init__(
        self,
        backend: HarnessBackend | None = None,
        *,
        source: str | None = None,
        catalog: Any = None,
        **controls: Any,
    ) -> None:
        self.backend = backend or HarnessBackend(live=source != "model")
        self._lock = threading.RLock()
        self._controls = Controls()
        self._esc = EscalationInputs()
        self._view: InspectorView | None = None
        self._live = self.backend.live_status()
        self._era_live = self._era_statuses()
        self.catalog_state = catalog  # inspector_catalog.CatalogState | None
        auto = source is None
        if source is None:
            source = "live" if _live_usable(self._live) else "model"
        self.update(source=source, **controls)
        self._auto_source = auto

    # -- reading ----------------------------------------------------------------------
    @property
    def controls(self) -> Controls:
        return self._controls

    @property
    def escalation_inputs(self) -> EscalationInputs:
        return self._esc

    @property
    def live(self) -> LiveStatus | None:
        return self._live

    def view(self) -> InspectorView:
        with self._lock:
            if self._view is None:
                self._view = self._compute()
            return self._view

    def effective_source(self) -> str:
        return self._source_for(self._controls.era)

    def _source_for(self, era: str) -> str:
        """Live for ``era`` when live is chosen and that era's bridge is ready."""
        st = self._era_live.get(era)
        if self._controls.source == "live" and st is not None and st.state == "ready":
            return "live"
        return "model"

    def _era_statuses(self) -> dict[str, LiveStatus | None]:
        return {e: self.backend.live_status(e) for e in ERAS if self.backend.live_covers(e)}

    # -- options for the controls ---------------------------------------------------------
    def preset_options(self) -> list[tuple[str, str]]:
        opts = [(p.title, k) for k, p in self.backend.presets().items()]
        return [*opts, ("custom", CUSTOM)]

    def baseline_options(self) -> list[tuple[str, str]]:
        opts = [(f"{p.title}", k) for k, p in self.backend.presets().items()]
        opts += [(title, k) for k, (title, _bg, _sb) in EXTRA_BASELINES.items()]
        opts.append((f"this configuration in {CURRENT_ERA}", CURRENT_ERA_BASELINE))
        return opts

    # -- writing ----------------------------------------------------------------------
    def update(self, **changes: Any) -> InspectorView:
        """Apply control changes (validated) and return the new view.

        Choosing a preset sets background and sandbox (and the simulator's
        approval setup); changing background or sandbox by hand selects the
        preset with exactly that configuration, or ``custom``.
        """
        with self._lock:
            c = self._controls
            esc = self._esc
            unknown = set(changes) - {f.name for f in dataclasses.fields(Controls)}
            if unknown:
                raise InvalidArgument(f"unknown inspector control(s): {', '.join(sorted(unknown))}")
            if "source" in changes:
                _check(changes["source"], SOURCES, "source")
            if "era" in changes:
                era_info(changes["era"])
            if "sandbox" in changes:
                if changes["sandbox"] in ("none", ""):
                    changes["sandbox"] = None
                _check(changes["sandbox"], SANDBOX_MODES, "sandbox mode")
            if "background" in changes:
                changes["background"] = bool(changes["background"])
            if "baseline" in changes:
                _check(changes["baseline"], [k for _t, k in self.baseline_options()], "baseline")
            presets = self.backend.presets()
            if "preset" in changes and changes["preset"] != CUSTOM:
                key = changes["preset"]
                _check(key, [*presets, CUSTOM], "preset")
                p = presets[key]
                changes.setdefault("background", p.config.background)
                changes.setdefault("sandbox", p.config.sandbox)
                esc = dataclasses.replace(esc, policy=p.policy, approver=p.approver)
            c = dataclasses.replace(c, **changes)
            if ("background" in changes or "sandbox" in changes) and "preset" not in changes:
                match = [
                    k for k, p in presets.items()
                    if p.config.background == c.background and p.config.sandbox == c.sandbox
                ]  # fmt: skip
                c = dataclasses.replace(c, preset=match[0] if match else CUSTOM)
            if "sandbox" in changes and c.sandbox is not None:
                esc = dataclasses.replace(esc, mode=c.sandbox)
            if "source" in changes:
                self._auto_source = False  # the user chose; stop following the bridge
            self._controls = c
            self._esc = esc
            self._view = None
            return self.view()

    def update_escalation(self, **changes: Any) -> InspectorView:
        """Change the simulator's inputs; ``request=None`` means the field is absent."""
        with self._lock:
            unknown = set(changes) - {f.name for f in dataclasses.fields(EscalationInputs)}
            if unknown:
                raise InvalidArgument(f"unknown escalation input(s): {', '.join(sorted(unknown))}")
            if "mode" in changes:
                _check(changes["mode"], CONFINED, "standing mode")
            if "request" in changes:
                if changes["request"] in ("", "none", "(absent)"):
                    changes["request"] = None
                _check(changes["request"], (None, *CONFINED), "requested sandbox_permissions")
            if "outcome" in changes:
                _check(changes["outcome"], OUTCOMES, "approval outcome")
            if "policy" in changes:
                _check(changes["policy"], POLICIES, "policy")
            self._esc = dataclasses.replace(self._esc, **changes)
            self._view = None
            return self.view()

    def set_live_status(self, status: LiveStatus | None) -> bool:
        """Record a bridge state change; returns True when the view changes.

        In auto mode the inspector follows live: it switches to live when the
        bridge becomes ready, and back to the model if it fails.
        """
        with self._lock:
            before = (self.effective_source(), self._badge_key())
            self._live = status
            self._era_live = self._era_statuses()
            if self._auto_source and status is not None:
                want = "model" if status.state == "unavailable" else "live"
                self._controls = dataclasses.replace(self._controls, source=want)
            after = (self.effective_source(), self._badge_key())
            if before != after:
                self._view = None
                return True
            return False

    def _badge_key(self) -> tuple[Any, ...]:
        states = tuple(
            (e, st.state if st else None, st.message if st else None)
            for e, st in sorted(self._era_live.items())
        )
        st = self._live
        return (self._controls.source, st.state if st else None, states)

    # -- computing ----------------------------------------------------------------------
    def _baseline_config(self) -> tuple[Config, str]:
        c = self._controls
        key = c.baseline
        presets = self.backend.presets()
        if key == CURRENT_ERA_BASELINE:
            cfg = Config(background=c.background, sandbox=c.sandbox, era=CURRENT_ERA)  # type: ignore[arg-type]
            return cfg, f"this configuration in {CURRENT_ERA}"
        if key in presets:
            p = presets[key]
            return dataclasses.replace(p.config, era=c.era), p.title
        title, bg, sb = EXTRA_BASELINES[key]
        return Config(background=bg, sandbox=sb, era=c.era), title  # type: ignore[arg-type]

    def _badge(self, source: str) -> Badge:
        c = self._controls
        covered = self.backend.live_covers(c.era)
        st = self._era_live.get(c.era) if covered else self._live
        pkg = "@deepseek-ai/dsh-tool-bash"
        if source == "live":
            version = st.version if st else self.backend.version
            return Badge(
                "live", c.source, version, "ready", f"LIVE · {pkg}@{version} · exact texts"
            )
        version = self.backend.version_for(c.era) or self.backend.version
        state = st.state if st is not None else "disabled"
        text = f"MODEL · facts of {pkg}@{version} · our summaries, no harness prose"
        detail = ""
        if c.source == "live":
            if st is None:
                detail = "live is disabled for this inspector"
            elif st.state in ("idle", "installing", "booting"):
                what = {"idle": "starting", "installing": "installing", "booting": "booting"}[
                    st.state
                ]
                detail = f"live is loading ({what}{': ' + st.message if st.message else ''})…"
            elif st.state == "unavailable":
                detail = f"live unavailable: {_first_line(st.message)}"
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
            detail = f"live unavailable: {_first_line(st.message)}"
        return Badge("model", c.source, version, state, text, detail)

    def _compute(self) -> InspectorView:
        c = self._controls
        source = self.effective_source()
        cfg = c.config()
        base_cfg, base_label = self._baseline_config()
        notes: list[str] = []
        # The baseline may be another era: live there only when its own bridge is ready.
        base_source = self._source_for(base_cfg.era) if source == "live" else "model"
        try:
            view = self.backend.schema(cfg, source)
            base_view = self.backend.schema(base_cfg, base_source)
        except DshError as exc:
            # A live failure mid-session: fall back to the model and say so.
            notes.append(f"{source} failed ({exc.code}): {exc.message}; showing the model")
            source = "model"
            view = self.backend.schema(cfg, source)
            base_view = self.backend.schema(base_cfg, source)
        notes.extend(view.notes)
        badge = self._badge(source)
        if badge.detail:
            notes.insert(0, badge.detail)
        cur, base = view.bash, base_view.bash
        d = diff_views(base_view, view, tool="bash")
        params = ParamTable("bash", _param_rows(view, d), base_label)
        cur_json = _pretty(cur)
        js = JsonView(cur_json, _json_lines(_pretty(base), cur_json), cur.description_is_summary)
        return InspectorView(
            badge=badge,
            controls=c,
            escalation_inputs=self._esc,
            config_label=cfg.label(),
            baseline_label=base_label,
            variant=view.variant,
            inputs=view.inputs,
            params=params,
            json=js,
            description=self._description(cur, base, d.fragments_changed),
            matrix=self._matrix(source, cfg),
            eras=EraView(
                era_info(c.era),
                _tool_rows(view.tools),
                _tool_rows(view.related),
                tuple(era_info(e) for e in ERAS),
            ),  # fmt: skip
            escalation=self._escalation(source, view),
            notes=tuple(notes),
            catalog=self.catalog_state.view(self) if self.catalog_state is not None else None,
        )

    def _description(self, cur: Tool, base: Tool, changed: tuple[str, ...]) -> DescriptionView:
        base_keys = {f.key for f in base.fragments}
        cur_keys = {f.key for f in cur.fragments}
        rows = []
        for f in cur.fragments:
            chars, tokens = _fragment_size(f.text, f.facts)
            status = (
                "added" if f.key not in base_keys else "changed" if f.key in changed else "same"
            )
            rows.append(
                FragmentRow(
                    f.key,
                    FRAGMENT_TITLES.get(f.key, f.key),
                    f.summary,
                    f.text,
                    chars,
                    tokens,
                    status,
                )
            )
        for f in base.fragments:
            if f.key not in cur_keys:
                chars, tokens = _fragment_size(f.text, f.facts)
                rows.append(
                    FragmentRow(
                        f.key,
                        FRAGMENT_TITLES.get(f.key, f.key),
                        f.summary,
                        f.text,
                        chars,
                        tokens,
                        "removed",
                    )
                )
        chars, tokens = _description_size(cur)
        bchars, btokens = _description_size(base)
        tchars, ttokens = tool_size(cur)
        btchars, bttokens = tool_size(base)
        return DescriptionView(
            tuple(rows), not cur.description_is_summary, chars, tokens, bchars, btokens,
            tchars, ttokens, btchars, bttokens,
        )  # fmt: skip

    def _matrix(self, source: str, cfg: Config) -> MatrixView:
        m = self.backend.matrix(source, cfg.era)
        not_applicable = {i.name for i in m.inputs if not i.applicable}
        rows = []
        for r in m.rows:
            rc = r.config
            same_bg = (
                "enable_run_in_background" in not_applicable or rc.background == cfg.background
            )
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

    def _escalation(self, source: str, view: SchemaView) -> EscalationView:
        esc = self._esc
        advertised = "sandbox_permissions" in view.bash.param_names
        targets = tuple(
            TargetRow(t, t in WIDER_MODES.get(esc.mode, ())) for t in ESCALATION_TARGETS
        )
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
        # The simulator runs the primary bridge's chain (the current era's packages).
        esc_source = self._source_for(self.backend.primary_era) if source == "live" else "model"
        try:
            r = self.backend.escalate(esc.request_obj(), esc_source)
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


def _first_line(message: str) -> str:
    """A failure is one line in the badge (npm's output tail stays in the status)."""
    lines = message.strip().splitlines()
    return lines[0].rstrip(":") if lines else message


def _live_usable(st: LiveStatus | None) -> bool:
    """Auto mode picks live only when it needs no install: ready, on its way, or installed."""
    if st is None:
        return False
    return st.state in ("ready", "booting", "installing") or (st.state == "idle" and st.installed)


def _check(value: Any, allowed: Any, what: str) -> None:
    allowed = list(allowed)
    if value not in allowed:
        shown = ", ".join("none" if a is None else str(a) for a in allowed)
        raise InvalidArgument(f"unknown {what} {value!r}; expected one of {shown}")


__all__ = [
    "Badge",
    "Controls",
    "DescriptionView",
    "EraView",
    "EscalationInputs",
    "EscalationView",
    "InspectorState",
    "InspectorView",
    "JsonView",
    "MatrixView",
    "ParamTable",
]
