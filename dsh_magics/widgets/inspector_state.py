"""The inspector's state: control values in, an :class:`InspectorView` out.

Pure and non-blocking, so tests read the view directly and the static fallback shows the same.
Inputs live in :mod:`.inspector_controls`, view data in :mod:`.inspector_view`, and
the sections are computed by :mod:`.inspector_sections`.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from ..errors import DshError, InvalidArgument
from ..harness import (
    CURRENT_ERA,
    ERAS,
    OUTCOMES,
    POLICIES,
    SANDBOX_MODES,
    Config,
    LiveStatus,
    diff,
    era_info,
)
from . import inspector_sections as sections
from .inspector_backend import HarnessBackend
from .inspector_controls import (
    CONFINED,
    CURRENT_ERA_BASELINE,
    CUSTOM,
    EXTRA_BASELINES,
    SOURCES,
    Controls,
    EscalationInputs,
    check_choice,
)
from .inspector_view import EraView, InspectorView, JsonView, ParamTable


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
                check_choice(changes["source"], SOURCES, "source")
            if "era" in changes:
                era_info(changes["era"])
            if "sandbox" in changes:
                if changes["sandbox"] in ("none", ""):
                    changes["sandbox"] = None
                check_choice(changes["sandbox"], SANDBOX_MODES, "sandbox mode")
            if "background" in changes:
                changes["background"] = bool(changes["background"])
            if "baseline" in changes:
                check_choice(changes["baseline"], [k for _t, k in self.baseline_options()], "baseline")
            presets = self.backend.presets()
            if "preset" in changes and changes["preset"] != CUSTOM:
                key = changes["preset"]
                check_choice(key, [*presets, CUSTOM], "preset")
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
                check_choice(changes["mode"], CONFINED, "standing mode")
            if "request" in changes:
                if changes["request"] in ("", "none", "(absent)"):
                    changes["request"] = None
                check_choice(changes["request"], (None, *CONFINED), "requested sandbox_permissions")
            if "outcome" in changes:
                check_choice(changes["outcome"], OUTCOMES, "approval outcome")
            if "policy" in changes:
                check_choice(changes["policy"], POLICIES, "policy")
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
        # The simulator runs the primary bridge's chain (the current era's packages).
        esc_source = self._source_for(self.backend.primary_era) if source == "live" else "model"
        badge = sections.badge(c, source, self.backend, self._era_live, self._live)
        if badge.detail:
            notes.insert(0, badge.detail)
        cur, base = view.bash, base_view.bash
        d = diff(base_view, view, tool="bash")
        params = ParamTable("bash", sections.param_rows(view, d), base_label)
        cur_json = sections.pretty_json(cur)
        js = JsonView(
            cur_json,
            sections.json_lines(sections.pretty_json(base), cur_json),
            cur.description_is_summary,
        )
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
            description=sections.description_view(cur, base, d.fragments_changed),
            matrix=sections.matrix_view(self.backend.matrix(source, cfg.era), cfg),
            eras=EraView(
                era_info(c.era),
                sections.tool_rows(view.tools),
                sections.tool_rows(view.related),
                tuple(era_info(e) for e in ERAS),
            ),  # fmt: skip
            escalation=sections.escalation_view(self.backend, self._esc, view, esc_source),
            notes=tuple(notes),
            catalog=self.catalog_state.view(self) if self.catalog_state is not None else None,
        )


def _live_usable(st: LiveStatus | None) -> bool:
    """Auto mode picks live only when it needs no install: ready, on its way, or installed."""
    if st is None:
        return False
    return st.state in ("ready", "booting", "installing") or (st.state == "idle" and st.installed)


__all__ = ["InspectorState"]
