"""The tool-schema inspector: thin ipywidgets controls over :class:`InspectorState`.

Decisions live in :mod:`.inspector_state`, markup in :mod:`.inspector_html`; the kernel never waits.
"""

from __future__ import annotations

import threading
import time
from html import escape
from typing import Any

from ..errors import DshError
from ..harness import ERAS, OUTCOMES, POLICIES, LiveStatus
from ..notebook.render import LITERAL
from .inspector_backend import HarnessBackend
from .inspector_controls import CONFINED, SOURCES
from .inspector_html import (
    CSS,
    SECTIONS,
    TEXT_SECTIONS,
    badge_html,
    render_html,
    render_text,
    section_html,
    text_header,
)
from .inspector_state import InspectorState
from .inspector_view import InspectorView

SANDBOX_OPTIONS = [
    ("none (unconfined executor)", "none"),
    ("read-only", "read-only"),
    ("workspace-write", "workspace-write"),
    ("danger-full-access", "danger-full-access"),
]
REQUEST_OPTIONS = [("(absent)", "none"), *((m, m) for m in CONFINED)]


def _in_kernel() -> bool:
    """True inside a Jupyter kernel (where a widget frontend may exist)."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return False
    ip = get_ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


class Section:
    """A static snapshot of one section (for guided tours and reports)."""

    def __init__(self, view: InspectorView, key: str) -> None:
        self.view = view
        self.key = key

    def _repr_html_(self) -> str:
        return CSS + badge_html(self.view) + section_html(self.view, self.key)

    def __repr__(self) -> str:
        return text_header(self.view) + "\n\n" + TEXT_SECTIONS[self.key](self.view)


class Inspector:
    """The inspector: a view-model plus, in a kernel, its widget.

    Use :meth:`set` and :meth:`escalate` from code (they refresh the widget
    too), :attr:`view` to read what is shown, and :meth:`section` for a static
    snapshot of one pane.
    """

    def __init__(self, state: InspectorState) -> None:
        self.state = state
        self._widget: Any = None
        # Per thread: a refresh on the bridge's thread must not swallow a user's
        # change arriving on the kernel thread at the same moment (pinned by
        # tests/widgets/test_inspector_widget.py::test_a_change_during_another_threads_refresh_is_not_swallowed).
        self._local = threading.local()
        self._render_lock = threading.RLock()
        self.last_render_ms: float | None = None
        self._display_ids: list[str] = []
        self._unsubscribe = state.backend.on_live_status(self._on_live_status)
        # A transition between the state's first look and the subscription is not lost
        # (pinned by tests/widgets/test_inspector_live.py::
        # test_a_bridge_ready_before_the_widget_subscribes_is_not_missed):
        state.set_live_status(state.backend.live_status())
        self._maybe_start_live()

    # -- public API -------------------------------------------------------------------
    @property
    def view(self) -> InspectorView:
        return self.state.view()

    def set(self, **controls: Any) -> Inspector:
        """Change schema controls (source, era, background, sandbox, preset, baseline)."""
        self.state.update(**controls)
        if "source" in controls:
            self._maybe_start_live()
        self._refresh()
        return self

    def escalate(self, **inputs: Any) -> Inspector:
        """Change the simulator's inputs (mode, request, justification, outcome,
        approver, agent, policy); the result is in ``view.escalation``."""
        self.state.update_escalation(**inputs)
        self._refresh()
        return self

    def select_tool(self, key: str) -> Inspector:
        """Select a catalog tool (``"package::name"``) when a catalog is loaded."""
        if self.state.catalog_state is None:
            from ..errors import InvalidArgument

            raise InvalidArgument("no catalog is loaded (use %bash_schema --catalog PATH)")
        self.state.catalog_state.select(key)
        self.state.update()
        self._refresh()
        return self

    def section(self, key: str) -> Section:
        """A static HTML/text snapshot of one section: params, json, description,
        matrix, eras, escalation, catalog."""
        if key not in TEXT_SECTIONS:
            from ..errors import InvalidArgument

            raise InvalidArgument(
                f"unknown section {key!r}; expected one of {', '.join(TEXT_SECTIONS)}"
            )
        return Section(self.view, key)

    def wait_for_live(self, timeout: float = 120.0) -> LiveStatus | None:
        """Block until the live bridge is ready or unavailable (explicit, opt-in).

        The widget never calls this; a script or a guided tour that wants
        deterministic exact texts may.  It also re-sends this inspector's
        displayed outputs, so a notebook executed headless (nbclient, which
        only records updates that arrive while a cell runs) saves the settled
        source rather than the loading state.
        """
        fut = self.state.backend.start_live() if self.state.controls.source == "live" else None
        if fut is not None:
            fut.result(timeout)
        st = self.state.backend.live_status()
        with self._render_lock:
            self.state.set_live_status(st)
            self._update_displays()
            self._refresh()
        return st

    def close(self) -> None:
        self._unsubscribe()
        if self._widget is not None:
            self._widget.close()

    # -- display ----------------------------------------------------------------------
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        view = self.view
        bundle: dict[str, Any] = {"text/plain": render_text(view), "text/html": render_html(view)}
        if _in_kernel():
            data = self.widget._repr_mimebundle_()
            if isinstance(data, dict) and "application/vnd.jupyter.widget-view+json" in data:
                bundle["application/vnd.jupyter.widget-view+json"] = data[
                    "application/vnd.jupyter.widget-view+json"
                ]
        return bundle

    def _repr_html_(self) -> str:
        return render_html(self.view)

    def _ipython_display_(self) -> None:
        """Display with a display id, so the static fallback can follow the source.

        When live becomes ready (or fails) after the inspector was shown, the
        cell's output is updated once, so a saved notebook's static HTML and
        text say which source really answered.  Control changes do not update
        it (that would redraw the widget view on every click).
        """
        from IPython.display import display

        self._display_ids.append(f"dsh-inspector-{id(self)}-{len(self._display_ids)}")
        display(self._repr_mimebundle_(), raw=True, display_id=self._display_ids[-1])

    def __repr__(self) -> str:
        return render_text(self.view)

    # -- live -------------------------------------------------------------------------
    def _maybe_start_live(self) -> None:
        """Boot (and if needed install) the bridge in the background when live is wanted."""
        st = self.state.backend.live_status()
        if st is None or self.state.controls.source != "live":
            return
        if self.state.backend.live_idle():  # any live era's bridge, not only the primary
            self.state.backend.start_live()

    def _on_live_status(self, status: LiveStatus) -> None:
        """Bridge callback: hand off at once, so the bridge never waits on our locks."""
        threading.Thread(
            target=self._apply_live_status, name="dsh-inspector-live", daemon=True
        ).start()

    def _apply_live_status(self) -> None:
        # Read the bridge's *current* state, so out-of-order hand-offs still end right.
        # Widget updates made from this thread reach the frontend (pinned by
        # tests/browser/test_inspector_browser.py::test_inspector_widget_in_jupyterlab).
        with self._render_lock:
            status = self.state.backend.live_status()
            if status is None or not self.state.set_live_status(status):
                return
            # Outputs first: the frontend redraws the output (a new view of the same
            # widget model) before the widget's own state update arrives. Exercised by the
            # browser test above, which waits for the settled badge; no test orders them.
            if status.state in ("ready", "unavailable"):
                self._update_displays()
            self._refresh()

    def _update_displays(self) -> None:
        if not self._display_ids:
            return
        from IPython.display import update_display

        bundle = self._repr_mimebundle_()
        for display_id in self._display_ids:
            update_display(bundle, raw=True, display_id=display_id)

    # -- the widget ---------------------------------------------------------------------
    @property
    def widget(self) -> Any:
        """The ipywidgets tree (built on first use)."""
        if self._widget is None:
            self._widget = self._build()
            self._refresh()
        return self._widget

    def _build(self) -> Any:
        import ipywidgets as w

        st = self.state
        c = st.controls
        x = st.escalation_inputs
        narrow = w.Layout(width="auto")
        self.badge = w.HTML()
        self.badge.add_class("dsh-ctl-badge")
        self.c_source = w.ToggleButtons(options=list(SOURCES), value=c.source, description="source")
        self.c_era = w.Dropdown(options=list(ERAS), value=c.era, description="era")
        self.c_background = w.Checkbox(
            value=c.background, description="enableRunInBackground", indent=False
        )
        self.c_sandbox = w.Dropdown(
            options=SANDBOX_OPTIONS, value=c.sandbox or "none", description="sandbox", layout=narrow
        )
        self.c_preset = w.Dropdown(
            options=st.preset_options(), value=c.preset, description="preset", layout=narrow
        )
        self.c_baseline = w.Dropdown(
            options=st.baseline_options(), value=c.baseline, description="baseline", layout=narrow
        )
        self._names: dict[int, str] = {}
        for name in ("source", "era", "background", "sandbox", "preset", "baseline"):
            ctl = getattr(self, f"c_{name}")
            self._names[id(ctl)] = name
            ctl.add_class(f"dsh-ctl-{name}")
            ctl.style.description_width = "initial"
            ctl.observe(self._on_control, names="value")
        self.error = w.HTML()
        self.panes: dict[str, Any] = {}
        children, titles = [], []
        for title, key in SECTIONS:
            pane = w.HTML()
            pane.add_class(f"dsh-pane-{key}")
            self.panes[key] = pane
            if key == "escalation":
                children.append(w.VBox([self._build_escalation(x), pane]))
            else:
                children.append(pane)
            titles.append(title)
        if st.catalog_state is not None:
            self.c_tool = w.Dropdown(
                options=st.catalog_state.options(),
                value=st.catalog_state.selected,
                description="tool",
            )
            self.c_tool.add_class("dsh-ctl-tool")
            self.c_tool.observe(self._on_tool, names="value")
            pane = w.HTML()
            pane.add_class("dsh-pane-catalog")
            self.panes["catalog"] = pane
            children.append(w.VBox([self.c_tool, pane]))
            titles.append("Catalog")
        self.tabs = w.Tab(children=children, titles=tuple(titles))
        if st.catalog_state is not None:
            self.tabs.selected_index = len(children) - 1
        controls = w.VBox(
            [
                w.HBox([self.c_source, self.c_era]),
                w.HBox([self.c_background, self.c_sandbox]),
                w.HBox([self.c_preset, self.c_baseline]),
            ]
        )
        root = w.VBox([w.HTML(CSS), self.badge, controls, self.error, self.tabs])
        root.add_class("dsh-inspector")
        return root

    def _build_escalation(self, x: Any) -> Any:
        import ipywidgets as w

        self.e_mode = w.Dropdown(options=list(CONFINED), value=x.mode, description="standing mode")
        self.e_request = w.Dropdown(
            options=REQUEST_OPTIONS, value=x.request or "none", description="sandbox_permissions"
        )
        self.e_justification = w.Text(value=x.justification, description="justification")
        self.e_outcome = w.Dropdown(
            options=list(OUTCOMES), value=x.outcome, description="approver answers"
        )
        self.e_approver = w.Checkbox(
            value=x.approver, description="approver composed", indent=False
        )
        self.e_agent = w.Checkbox(value=x.agent, description="agent present", indent=False)
        self.e_policy = w.ToggleButtons(
            options=list(POLICIES), value=x.policy, description="policy"
        )
        for name in ("mode", "request", "justification", "outcome", "approver", "agent", "policy"):
            ctl = getattr(self, f"e_{name}")
            self._names[id(ctl)] = name
            ctl.add_class(f"dsh-esc-{name}")
            ctl.style.description_width = "initial"
            ctl.observe(self._on_escalation, names="value")
        self.e_justification.layout.width = "60%"
        return w.VBox(
            [
                w.HBox([self.e_mode, self.e_request]),
                self.e_justification,
                w.HBox([self.e_outcome, self.e_policy]),
                w.HBox([self.e_approver, self.e_agent]),
            ]
        )

    def _on_control(self, change: dict[str, Any]) -> None:
        if self._syncing():
            return
        name = self._names[id(change["owner"])]
        self._guarded(lambda: self.set(**{name: change["new"]}))

    def _on_escalation(self, change: dict[str, Any]) -> None:
        if self._syncing():
            return
        name = self._names[id(change["owner"])]
        self._guarded(lambda: self.escalate(**{name: change["new"]}))

    def _on_tool(self, change: dict[str, Any]) -> None:
        if not self._syncing():
            self._guarded(lambda: self.select_tool(change["new"]))

    def _syncing(self) -> bool:
        return bool(getattr(self._local, "syncing", False))

    def _guarded(self, action: Any) -> None:
        try:
            action()
            if self._widget is not None:
                self.error.value = ""
        except DshError as exc:  # one line, never a traceback in the widget
            if self._widget is not None:
                self.error.value = (
                    f'<div class="dsh-insp dsh-fail {LITERAL}">{escape(str(exc))}</div>'
                )

    def _refresh(self) -> None:
        """Push the current view into the widget (if built): controls, badge, panes."""
        if self._widget is None:
            return
        with self._render_lock:
            t0 = time.perf_counter()
            view = self.view
            c = view.controls
            x = view.escalation_inputs
            self._local.syncing = True
            try:
                self._assign(self.c_source, "value", c.source)
                self._assign(self.c_era, "value", c.era)
                self._assign(self.c_background, "value", c.background)
                self._assign(
                    self.c_background, "disabled", not view.applicable("enable_run_in_background")
                )
                self._assign(self.c_sandbox, "value", c.sandbox or "none")
                self._assign(self.c_preset, "value", c.preset)
                self._assign(self.c_baseline, "value", c.baseline)
                self._assign(self.e_mode, "value", x.mode)
                self._assign(self.e_request, "value", x.request or "none")
                self._assign(self.e_justification, "value", x.justification)
                self._assign(self.e_outcome, "value", x.outcome)
                self._assign(self.e_approver, "value", x.approver)
                self._assign(self.e_agent, "value", x.agent)
                self._assign(self.e_policy, "value", x.policy)
            finally:
                self._local.syncing = False
            self._assign(self.badge, "value", badge_html(view))
            for key, pane in self.panes.items():
                self._assign(pane, "value", section_html(view, key))
            self.last_render_ms = (time.perf_counter() - t0) * 1000

    @staticmethod
    def _assign(widget: Any, attr: str, value: Any) -> None:
        if getattr(widget, attr) != value:
            setattr(widget, attr, value)


def inspect(
    *,
    source: str | None = None,
    version: str | None = None,
    live: bool = True,
    catalog: Any = None,
    **controls: Any,
) -> Inspector:
    """Open the tool-schema inspector.

    ``source``: ``"live"`` (exact texts from the published packages, booted in
    the background), ``"model"`` (offline), or ``None`` for live when it is
    installed and usable, else the model.  ``live=False`` never touches Node.
    ``controls``: ``era``, ``background``, ``sandbox``, ``preset``, ``baseline``.
    ``catalog``: a path to a harness ``tool-catalog.md`` (or a parsed Catalog)
    to browse in a Catalog tab, with drift against live or the model.
    """
    from .. import harness
    from .inspector_catalog import CatalogState

    # Even with source="model" the bridge stays reachable (not started), so the
    # user can switch to live later; live=False cuts it off entirely.
    backend = HarnessBackend(version=version, live=live)
    cat_state = None
    if catalog is not None:
        cat = catalog if isinstance(catalog, harness.Catalog) else harness.load_catalog(catalog)
        cat_state = CatalogState(cat)
    state = InspectorState(backend, source=source, catalog=cat_state, **controls)
    return Inspector(state)
