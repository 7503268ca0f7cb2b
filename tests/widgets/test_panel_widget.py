"""The panel's ipywidgets layer and ``%bash_panel``, in process (ipywidgets'
dummy comm), over real terminals.

Buttons are pressed with ``Button.click()`` (what the comm message handler
calls), text is typed by setting the ``Text`` widgets' values, and the
assertions read the HTML the widgets would send to the frontend. The browser
test checks the same flows in JupyterLab.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import psutil
import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from dsh_magics.terminal import Registry
from dsh_magics.widgets.panel import Panel, panel
from dsh_magics.widgets.panel_magic import register, unregister
from dsh_magics.widgets.panel_model import shared_model
from tests.conftest import wait_until

NB = "nb-widget-test"


@pytest.fixture(scope="module")
def reg() -> Iterator[Registry]:
    r = Registry(login=False)
    yield r
    r.close_all()


@pytest.fixture
def panels(reg: Registry) -> Iterator[list[Panel]]:
    made: list[Panel] = []
    yield made
    for p in made:
        p.close()
    for info in reg.list():
        reg.close(info.session_id)


def new_panel(reg: Registry, made: list[Panel], **kw: object) -> Panel:
    p = panel(registry=reg, default_session=NB, **kw)  # type: ignore[arg-type]
    made.append(p)
    assert p.widget is not None  # built and attached to the shared model
    return p


def sleeping(reg: Registry, session: str) -> bool:
    try:
        kids = psutil.Process(reg.info(session).pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return False
    return any(k.name() == "sleep" for k in kids)


def test_buttons_send_interrupt_and_show_errors_inline(reg: Registry, panels: list[Panel]) -> None:
    p = new_panel(reg, panels)
    assert p.c_session.value == NB and "not started" in p.c_session.label
    assert p.b_interrupt.disabled and p.b_close.disabled  # nothing to act on yet

    p.c_command.value = "echo hello"
    p.b_send.click()
    assert p.c_command.value == ""  # accepted: the box is cleared
    wait_until(lambda: "<pre>hello</pre>" in p.h_output.value, 10, msg="hello in the pane")
    wait_until(lambda: 'data-status="completed" data-exit="0"' in p.h_jobs.value, 10)

    p.c_command.value = "sleep 30"
    p.b_send.click()
    wait_until(lambda: not p.b_interrupt.disabled, 10, msg="interrupt enabled while busy")
    assert f'data-session="{NB}" data-status="busy"' in p.h_terminals.value
    p.c_command.value = "echo again"
    p.b_send.click()
    assert 'data-code="SESSION_BUSY"' in p.h_notice.value
    assert p.c_command.value == "echo again"  # refused: kept for another try

    wait_until(lambda: sleeping(reg, NB), 10)
    p.b_interrupt.click()
    wait_until(
        lambda: 'data-status="interrupted"' in p.h_jobs.value, 10, msg="settled as interrupted"
    )
    wait_until(lambda: p.b_interrupt.disabled, 10)


def test_attach_select_recreate_and_close_all(reg: Registry, panels: list[Panel], tmp_path) -> None:
    p = new_panel(reg, panels)
    p.c_attach.value, p.c_cwd.value = "second", str(tmp_path)
    p.b_attach.click()
    assert p.c_session.value == "second" and reg.info("second").cwd == str(tmp_path)
    assert 'data-session="second" data-status="idle"' in p.h_terminals.value
    assert (p.c_attach.value, p.c_cwd.value) == ("", "")

    pid = reg.info("second").pid
    p.b_recreate.click()
    assert reg.info("second").pid != pid and p.c_session.value == "second"

    p.c_attach.value, p.c_cwd.value = "third", str(tmp_path / "nope")
    p.b_attach.click()
    assert 'data-code="INVALID_ARGUMENT"' in p.h_notice.value and not reg.exists("third")

    p.c_session.value = NB  # choosing in the dropdown selects the terminal
    assert p.selected == NB and 'data-session="nb-widget-test"' in p.h_output.value

    p.b_close_all.click()
    assert p.b_close_all.description == "Confirm close all" and reg.list()
    p.b_close_all.click()
    assert reg.list() == [] and p.b_close_all.disabled
    assert "closed 1 terminal(s)" in p.h_notice.value


def test_closing_draws_its_outcome_at_once(reg: Registry, panels: list[Panel], tmp_path) -> None:
    """Snapshots that arrive while Close runs (the refresher, woken by the
    shell's last output, listing after the terminal left the engine's list
    but before its closed event) are not drawn: the frontend never sees the
    row gone while the picker or the notice still speak of the terminal."""
    p = new_panel(reg, panels)
    p.attach("second", str(tmp_path))
    assert p.c_session.value == "second"
    term = reg._terms["second"]
    real_close = term.close

    def close_then_refresh() -> None:
        real_close()
        p.model.refresh()  # delivered to the panel mid-action

    term.close = close_then_refresh  # type: ignore[method-assign]
    drawn: list[tuple[str, tuple[str, ...], str]] = []
    p.h_terminals.observe(
        lambda ch: drawn.append((ch["new"], p.c_session._options_labels, p.h_notice.value)),
        names="value",
    )
    p.b_close.click()
    gone = [d for d in drawn if 'data-session="second"' not in d[0]]
    assert gone, drawn
    for _table, labels, notice in gone:
        assert not [label for label in labels if label.startswith("second")], labels
        assert "closed &#x27;second&#x27;" in notice, notice
    assert p.c_session.value == NB


def test_two_panels_stay_consistent(reg: Registry, panels: list[Panel]) -> None:
    a = new_panel(reg, panels)
    b = new_panel(reg, panels)
    assert a.model is b.model is shared_model(reg)

    a.attach("shared")
    # b hears about it through the model, not through a's action.
    assert 'data-session="shared"' in b.h_terminals.value
    assert "shared" in b.c_session.options[-1]
    b.c_session.value = "shared"
    b.send("echo from-b")
    wait_until(lambda: "from-b" in a.h_jobs.value, 10, msg="b's job listed in a")
    wait_until(lambda: 'data-status="completed"' in a.h_jobs.value, 10)
    assert a.h_jobs.value == b.h_jobs.value
    assert a.h_terminals.value.replace("dsh-selected", "") == b.h_terminals.value.replace(
        "dsh-selected", ""
    )

    a.close_terminal()  # a had "shared" selected since attaching it
    wait_until(lambda: b.selected == NB, 10, msg="b falls back")
    assert "&#x27;shared&#x27; was closed" in b.h_notice.value
    assert not any("shared" in label for label, _ in b.c_session.options)


def test_one_panel_shown_twice_is_one_set_of_widget_models(
    reg: Registry, panels: list[Panel]
) -> None:
    p = new_panel(reg, panels)
    first, second = p.widget._repr_mimebundle_(), p.widget._repr_mimebundle_()
    key = "application/vnd.jupyter.widget-view+json"
    assert first[key]["model_id"] == second[key]["model_id"]


def test_fallback_reprs_without_a_widget_frontend(reg: Registry, panels: list[Panel]) -> None:
    reg.exec(NB, "echo plain-view", wait_ms=10_000)
    p = panel(registry=reg, default_session=NB)
    panels.append(p)
    bundle = p._repr_mimebundle_()
    # Outside a kernel: text and HTML only, and the widget is never built.
    assert set(bundle) == {"text/plain", "text/html"}
    assert p._widget is None and not p.model.running
    assert "plain-view" in bundle["text/plain"] and "Terminals (1)" in bundle["text/plain"]
    assert f'data-session="{NB}" data-status="idle"' in bundle["text/html"]
    assert "Static snapshot" in bundle["text/html"]
    assert repr(p).startswith("Terminals (1)")


def test_closing_every_panel_stops_the_refresher(reg: Registry, panels: list[Panel]) -> None:
    a = new_panel(reg, panels)
    b = new_panel(reg, panels)
    assert a.model.running
    a.close()
    assert b.model.running
    b.close()
    assert not b.model.running


def test_magic_returns_a_panel_and_errors_are_one_line() -> None:
    ip = InteractiveShell.instance()
    register(ip)
    try:
        p = ip.run_line_magic("bash_panel", "--session build --lines 50")
        assert isinstance(p, Panel) and p.selected == "build" and p.state.tail == 50
        with pytest.raises(UsageError, match="^INVALID_ARGUMENT: session id must not contain"):
            ip.run_line_magic("bash_panel", "--session a/b")
        with pytest.raises(UsageError, match="^INVALID_ARGUMENT: lines must be"):
            ip.run_line_magic("bash_panel", "--lines 0")
        with pytest.raises(UsageError):
            ip.run_line_magic("bash_panel", "--lines many")
        assert "--session" in (ip.find_line_magic("bash_panel").__doc__ or "")
    finally:
        unregister(ip)
    assert ip.find_line_magic("bash_panel") is None


def _listening() -> set[tuple[str, object]]:
    conns = psutil.Process().net_connections(kind="all")
    return {(str(c.type), c.laddr) for c in conns if c.status == psutil.CONN_LISTEN}


def test_the_panel_opens_no_port_or_listener(reg: Registry, panels: list[Panel]) -> None:
    """Its only channel is the widget comm: no HTTP route, no socket of its own."""
    before = _listening()
    threads_before = {t.name for t in threading.enumerate()}
    p = new_panel(reg, panels)
    p.send("echo no-port")
    p.attach("np-second")
    p.close_terminal()
    wait_until(lambda: "no-port" in p.h_output.value, 10)
    assert _listening() == before
    new_threads = {t.name for t in threading.enumerate()} - threads_before
    assert not [n for n in new_threads if "http" in n.lower() or "server" in n.lower()]


def test_the_picker_sends_its_options_and_selection_in_one_message(
    reg: Registry, panels: list[Panel], tmp_path
) -> None:
    """Attaching changes the picker's options and its selection; the frontend gets both
    in one update, so it never draws the new options with the old index."""
    p = new_panel(reg, panels)
    sent: list[dict[str, object]] = []
    comm = p.c_session.comm
    real_send = comm.send

    def record(data: dict[str, object], *args: object, **kwargs: object) -> None:
        sent.append(data)
        real_send(data, *args, **kwargs)

    comm.send = record
    p.attach("second", str(tmp_path))
    updates = [m["state"] for m in sent if m.get("method") == "update"]
    with_options = [s for s in updates if "_options_labels" in s]
    assert with_options, updates
    assert all("index" in s for s in with_options), with_options
    assert p.c_session.value == "second"
