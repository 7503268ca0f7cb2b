"""The terminal panel (the plugin's settings page) as a notebook widget: the ipywidgets layer.

What is shown and what buttons do: :mod:`.panel_state` (shared facts: :mod:`.panel_model`);
markup: :mod:`.panel_html`.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from typing import Any

from ..errors import DshError
from ..terminal import default_registry
from ..terminal.api import Engine
from .panel_html import (
    CSS,
    jobs_html,
    notice_html,
    output_header_html,
    output_html,
    render_html,
    render_text,
    summary_html,
    terminals_html,
)
from .panel_model import PanelModel, shared_model
from .panel_state import PanelState
from .panel_view import DEFAULT_TAIL, Notice, PanelView, Snapshot

log = logging.getLogger(__name__)

_MAGICS_STATE_ATTR = "_dsh_magics_state"


def _ipython() -> Any:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython is a dependency
        return None
    return get_ipython()


def _in_kernel() -> bool:
    """True inside a Jupyter kernel, where a widget frontend may exist."""
    ip = _ipython()
    return ip is not None and getattr(ip, "kernel", None) is not None


def notebook_context(ip: Any = None) -> tuple[Engine, str]:
    """The registry and default session id the magics use in this kernel.

    With ``%load_ext dsh_magics`` loaded, the magics' own registry and
    session id (which honour their configuration); otherwise the process
    registry and the id derived from the notebook's identity, so the panel
    and the magics address the same terminal either way.
    """
    ip = ip if ip is not None else _ipython()
    magics = getattr(getattr(ip, _MAGICS_STATE_ATTR, None), "magics", None)
    if magics is not None:
        try:
            return magics.registry, magics.session
        except Exception:  # noqa: BLE001 - fall back to our own derivation
            log.debug("magics did not give a session id", exc_info=True)
    from ..notebook.identity import identify, kernel_connection_file

    ns = getattr(ip, "user_ns", None) or {}
    # Only a kernel has a connection file (and asking imports ipykernel).
    conn = kernel_connection_file() if getattr(ip, "kernel", None) is not None else None
    ident = identify(ns, os.environ, conn)
    return default_registry(), ident.session_id


class Panel:
    """The terminal panel: a :class:`PanelState` plus, in a kernel, its widget.

    The action methods (:meth:`send`, :meth:`interrupt`, :meth:`attach`,
    :meth:`recreate`, :meth:`close_terminal`, :meth:`close_all`) are what the
    buttons call, and work from code too; each returns the :class:`Notice`
    the panel shows. :meth:`close` closes the *widget*, not a terminal.
    """

    def __init__(
        self,
        registry: Engine,
        default_session: str,
        *,
        selected: str | None = None,
        lines: int = DEFAULT_TAIL,
        model: PanelModel | None = None,
    ) -> None:
        self.registry = registry
        self.model = model if model is not None else shared_model(registry)
        self.state = PanelState(self.model, default_session, selected=selected, tail=lines)
        self._lock = threading.RLock()
        self._widget: Any = None
        self._detach: Any = None
        self.o_tab: Any = None  # the terminal-tab output area, once the widget is built
        self._syncing = False
        self._acting = 0  # actions of this panel in flight (see _do)
        self.render_count = 0

    # -- reading ----------------------------------------------------------------------
    @property
    def view(self) -> PanelView:
        """What the panel shows, from a fresh snapshot (code reading it must
        not see a state up to one coalescing interval old)."""
        snap = self.model.refresh()
        with self._lock:
            self.state.accept(snap)
            return self.state.view()

    @property
    def selected(self) -> str:
        return self.state.selected or self.state.default_session

    # -- actions ----------------------------------------------------------------------
    def select(self, session_id: str) -> Panel:
        with self._lock:
            self.state.select(session_id)
        self._render()
        return self

    def show_screen(self, on: bool = True) -> Panel:
        """Show the selected terminal's screen always (else only while a
        full-screen program is on the alternate screen)."""
        with self._lock:
            self.state.set_screen(on)
        self._render()
        return self

    def follow(self, on: bool = True) -> Panel:
        with self._lock:
            self.state.set_follow(on)
        self._render()
        return self

    def send(self, command: str) -> Notice:
        return self._do(lambda: self.state.send(command))

    def answer(self, text: str, secret: bool = False) -> Notice:
        """Type an answer into the selected terminal's running job."""
        return self._do(lambda: self.state.answer(text, secret=secret))

    def press(self, key: str) -> Notice:
        """Press a named key in the selected terminal's running job."""
        return self._do(lambda: self.state.press(key))

    def interrupt(self) -> Notice:
        return self._do(self.state.interrupt)

    def attach(self, session_id: str, cwd: str | None = None) -> Notice:
        return self._do(lambda: self.state.attach(session_id, cwd))

    def recreate(self) -> Notice:
        return self._do(self.state.recreate)

    def close_terminal(self) -> Notice:
        return self._do(self.state.close)

    def close_all(self, confirm: bool = False) -> Notice:
        return self._do(lambda: self.state.close_all(confirm=confirm))

    def terminal_tab(self) -> Notice:
        """Open the selected terminal in a JupyterLab terminal tab (as ``%bash_terminal``):
        the output that opens it goes to the panel's tab area."""

        def run() -> Notice:
            from ..lab.tab import MIME, terminal_tab

            state = self.state
            session = state.selected or state.default_session
            try:
                data = terminal_tab(state.registry, session, state.default_session)
            except DshError as exc:
                notice = Notice.error(exc)
            else:
                if self.o_tab is not None:
                    out = {"output_type": "display_data", "data": data, "metadata": {}}
                    self._assign(self.o_tab, "outputs", (out,))
                notice = Notice("ok", f"terminal tab {data[MIME]['name']} for {session!r}")
            state.notice = notice
            return notice

        return self._do(run)

    def _do(self, action: Any) -> Notice:
        # No panel lock here: the action refreshes the shared model, which
        # takes the model lock and then every panel's lock (see panel_model).
        # Snapshots arriving while the action runs are accepted but not drawn:
        # the action's outcome is drawn once, at its end, so no view shows
        # half of it (say, a closed terminal's row gone while the picker and
        # the notice still speak of it). Pinned by
        # tests/widgets/test_panel_widget.py::test_closing_draws_its_outcome_at_once.
        with self._lock:
            self._acting += 1
        try:
            notice = action()
        except DshError as exc:  # pragma: no cover - PanelState already catches these
            notice = Notice.error(exc)
            self.state.notice = notice
        finally:
            with self._lock:
                self._acting -= 1
        self._render()
        return notice

    def close(self) -> None:
        """Detach from the shared model and close the widget (terminals stay)."""
        detach, self._detach = self._detach, None
        if detach is not None:
            detach()
        widget, self._widget = self._widget, None
        if widget is not None:
            _close_tree(widget)

    # -- display ----------------------------------------------------------------------
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        view = self.view
        bundle: dict[str, Any] = {"text/plain": render_text(view), "text/html": render_html(view)}
        if _in_kernel():
            data = self.widget._repr_mimebundle_()
            key = "application/vnd.jupyter.widget-view+json"
            if isinstance(data, dict) and key in data:
                bundle[key] = data[key]
        return bundle

    def _repr_html_(self) -> str:
        return render_html(self.view)

    def __repr__(self) -> str:
        return render_text(self.view)

    # -- the widget -------------------------------------------------------------------
    @property
    def widget(self) -> Any:
        """The ipywidgets tree (built, and attached to the shared model, on first use)."""
        if self._widget is None:
            self._widget = self._build()
            self._detach = self.model.add_view(self._on_snapshot)
            self._render()
        return self._widget

    def _build(self) -> Any:
        import ipywidgets as w

        def button(label: str, cls: str, style: str = "", tip: str = "") -> Any:
            b = w.Button(description=label, button_style=style, tooltip=tip or label)
            b.layout.width = "auto"
            b.add_class(cls)
            return b

        def html(cls: str) -> Any:
            h = w.HTML()
            h.add_class(cls)
            return h

        self.h_summary = html("dsh-panel-summary-w")
        self.h_terminals = html("dsh-panel-terminals-w")
        self.c_session = w.Dropdown(description="terminal", options=[])
        self.c_session.style.description_width = "initial"
        self.c_session.add_class("dsh-panel-session")
        self.c_session.observe(self._on_select, names="value")
        self.b_interrupt = button(
            "Interrupt", "dsh-panel-interrupt", "warning", "Ctrl-C to the running job"
        )
        self.b_recreate = button("Recreate", "dsh-panel-recreate", tip="replace the shell")
        self.b_close = button("Close", "dsh-panel-close", tip="close the selected terminal")
        self.b_close_all = button("Close all", "dsh-panel-close-all", tip="close every terminal")
        self.c_command = w.Text(placeholder="command to run as a job, e.g. make -j2")
        self.c_command.layout.width = "60%"
        self.c_command.add_class("dsh-panel-command")
        self.b_send = button("Send", "dsh-panel-send", "primary", "run the command as a job")
        # Answering the running job: a line for it, or (when it asks for
        # hidden entry) a password box whose text is never shown or recorded.
        self.c_answer = w.Text(placeholder="answer the running job (typed, then Enter)")
        self.c_answer.layout.width = "60%"
        self.c_answer.add_class("dsh-panel-answer")
        self.b_answer = button("Type", "dsh-panel-type", tip="type the answer into the running job")
        self.c_secret = w.Password(placeholder="password (hidden, never recorded)")
        self.c_secret.layout.width = "60%"
        self.c_secret.add_class("dsh-panel-password")
        self.b_secret = button("Send hidden", "dsh-panel-send-hidden", tip="type the hidden answer")
        self.b_ctrl_d = button("Ctrl-D", "dsh-panel-ctrl-d", tip="end of input (leaves a REPL)")
        self.c_attach = w.Text(placeholder="new session id")
        self.c_attach.add_class("dsh-panel-attach-id")
        self.c_cwd = w.Text(placeholder="cwd (optional)")
        self.c_cwd.add_class("dsh-panel-attach-cwd")
        self.b_attach = button("Attach", "dsh-panel-attach", tip="open a terminal (or cd it)")
        self.b_tab = button(
            "Terminal tab", "dsh-panel-terminal-tab", tip="open it in a JupyterLab terminal tab"
        )
        self.o_tab = w.Output()
        self.o_tab.add_class("dsh-panel-terminal-tab-out")
        self.h_notice = html("dsh-panel-notice-w")
        self.h_outhead = html("dsh-panel-outhead-w")
        self.c_follow = w.Checkbox(value=True, description="follow", indent=False)
        self.c_follow.layout.width = "auto"
        self.c_follow.add_class("dsh-panel-follow")
        self.c_follow.observe(self._on_follow, names="value")
        self.c_screen = w.Checkbox(value=False, description="screen", indent=False)
        self.c_screen.layout.width = "auto"
        self.c_screen.add_class("dsh-panel-screen")
        self.c_screen.observe(self._on_screen, names="value")
        self.h_output = html("dsh-panel-output-w")
        self.h_jobs = html("dsh-panel-jobs-w")

        self.b_send.on_click(lambda _b: self._on_send())
        self.b_answer.on_click(lambda _b: self._on_answer(secret=False))
        self.b_secret.on_click(lambda _b: self._on_answer(secret=True))
        self.b_ctrl_d.on_click(lambda _b: self.press("ctrl-d"))
        self.b_interrupt.on_click(lambda _b: self.interrupt())
        self.b_recreate.on_click(lambda _b: self.recreate())
        self.b_close.on_click(lambda _b: self.close_terminal())
        self.b_close_all.on_click(lambda _b: self.close_all(confirm=self.state.confirm_close_all))
        self.b_attach.on_click(lambda _b: self._on_attach())
        self.b_tab.on_click(lambda _b: self.terminal_tab())

        root = w.VBox(
            [
                w.HTML(CSS),
                self.h_summary,
                self.h_terminals,
                w.HBox(
                    [
                        self.c_session,
                        self.b_interrupt,
                        self.b_recreate,
                        self.b_close,
                        self.b_close_all,
                        self.b_tab,
                    ]
                ),
                w.HBox([self.c_command, self.b_send]),
                w.HBox([self.c_answer, self.b_answer, self.c_secret, self.b_secret, self.b_ctrl_d]),
                w.HBox([self.c_attach, self.c_cwd, self.b_attach]),
                self.h_notice,
                self.o_tab,
                w.HBox([self.h_outhead, self.c_follow, self.c_screen]),
                self.h_output,
                w.HTML("<b>Recent jobs</b>"),
                self.h_jobs,
            ]
        )
        root.add_class("dsh-panel")
        return root

    # -- widget events ----------------------------------------------------------------
    def _on_send(self) -> None:
        notice = self.send(self.c_command.value)
        if notice.kind == "ok":
            self._assign(self.c_command, "value", "")

    def _on_answer(self, secret: bool) -> None:
        box = self.c_secret if secret else self.c_answer
        text = box.value
        # The password box is emptied whatever happens: its text must not linger (pinned by
        # tests/browser/test_panel_answer_browser.py::test_panel_answers_a_prompt_and_a_password).
        if secret:
            self._assign(box, "value", "")
        notice = self.answer(text, secret=secret)
        if notice.kind == "ok" and not secret:
            self._assign(box, "value", "")

    def _on_attach(self) -> None:
        notice = self.attach(self.c_attach.value, self.c_cwd.value)
        if notice.kind == "ok":
            self._assign(self.c_attach, "value", "")
            self._assign(self.c_cwd, "value", "")

    def _on_select(self, change: dict[str, Any]) -> None:
        if self._syncing or not change["new"]:
            return
        try:
            self.select(change["new"])
        except DshError as exc:
            self.state.notice = Notice.error(exc)
            self._render()

    def _on_follow(self, change: dict[str, Any]) -> None:
        if not self._syncing:
            self.follow(bool(change["new"]))

    def _on_screen(self, change: dict[str, Any]) -> None:
        if not self._syncing:
            self.show_screen(bool(change["new"]))

    def _on_snapshot(self, snap: Snapshot) -> None:
        # Called by the shared model (refresher thread or another panel's action).
        with self._lock:
            if not self.state.accept(snap) or self._acting:
                return
        self._render()

    # -- rendering --------------------------------------------------------------------
    def _render(self) -> None:
        """Push the current view into the widgets; unchanged values send nothing."""
        if self._widget is None:
            return
        with self._lock:
            view = self.state.view(now=time.time())
            info = view.selected_info
            self._syncing = True
            try:
                # Options and selection travel in one message: the frontend
                # never draws the new options with the old index (pinned by
                # tests/widgets/test_panel_widget.py::test_the_picker_sends_its_options_and_selection_in_one_message).
                with self.c_session.hold_sync():
                    opts = view.session_options()
                    if list(self.c_session.options) != opts:
                        self.c_session.options = opts
                    self._assign(self.c_session, "value", view.selected)
                self._assign(self.c_follow, "value", not view.output.paused)
                self._assign(self.c_screen, "value", self.state.screen)
            finally:
                self._syncing = False
            busy = info is not None and info.status == "busy"
            self._assign(self.b_interrupt, "disabled", not busy)
            waiting = (info.awaiting_input if info is not None else None) or {}
            secret = bool(waiting.get("secret"))
            for widget in (self.c_answer, self.b_answer, self.b_ctrl_d, self.c_secret, self.b_secret):
                self._assign(widget, "disabled", not busy)
            # The password box replaces the answer box while the job asks for hidden entry.
            self._assign(self.c_answer.layout, "display", "none" if secret else "")
            self._assign(self.b_answer.layout, "display", "none" if secret else "")
            self._assign(self.c_secret.layout, "display", "" if secret else "none")
            self._assign(self.b_secret.layout, "display", "" if secret else "none")
            self._assign(self.b_recreate, "disabled", info is None)
            self._assign(self.b_close, "disabled", info is None)
            armed = view.confirm_close_all
            self._assign(
                self.b_close_all, "description", "Confirm close all" if armed else "Close all"
            )
            self._assign(self.b_close_all, "button_style", "danger" if armed else "")
            self._assign(self.b_close_all, "disabled", not view.terminals)
            self._assign(self.h_summary, "value", summary_html(view))
            self._assign(self.h_notice, "value", notice_html(view.notice))
            self._assign(self.h_outhead, "value", output_header_html(view))
            self._assign(self.h_output, "value", output_html(view))
            self._assign(self.h_jobs, "value", jobs_html(view))
            # The terminals table goes last: once it shows a change, the picker, notice
            # and output of the same render are already there (pinned by
            # tests/widgets/test_panel_widget.py::test_closing_draws_its_outcome_at_once).
            self._assign(self.h_terminals, "value", terminals_html(view))
            self.render_count += 1

    @staticmethod
    def _assign(widget: Any, attr: str, value: Any) -> None:
        if getattr(widget, attr) != value:
            setattr(widget, attr, value)


def _close_tree(widget: Any) -> None:
    """Close a widget and every widget under it, layouts and styles included
    (``close()`` alone leaves their comms open until interpreter exit)."""
    for child in getattr(widget, "children", ()):
        _close_tree(child)
    for part in (getattr(widget, "layout", None), getattr(widget, "style", None)):
        if part is not None and hasattr(part, "close"):
            part.close()
    widget.close()


def panel(
    session: str | None = None,
    *,
    registry: Engine | None = None,
    lines: int = DEFAULT_TAIL,
    default_session: str | None = None,
) -> Panel:
    """Open the terminal panel.

    ``session`` preselects a terminal (default: this notebook's).
    ``registry`` and ``default_session`` default to what the magics use in
    this kernel. ``lines`` is how many of the retained lines the output pane
    shows (the header always gives the full counts).
    """
    if registry is None or default_session is None:
        reg, sid = notebook_context()
        registry = registry if registry is not None else reg
        default_session = default_session if default_session is not None else sid
    if session is not None:
        from ..terminal import validate_session_id

        validate_session_id(session)
    return Panel(registry, default_session, selected=session, lines=lines)
