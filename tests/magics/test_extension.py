"""Loading, unloading and reloading the extension (in-process IPython)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

from IPython.utils.capture import capture_output

from dsh_magics.terminal import ReadResult, Result, TerminalInfo
from tests.magics.conftest import magics_of

MAGICS = [
    "bash_attach",
    "bash_exec",
    "bash_wait",
    "bash_read",
    "bash_interrupt",
    "bash_close",
    "bash_list",
]


def _formatters(ip: Any) -> list[Any]:
    f = ip.display_formatter.formatters
    return [f["text/plain"], f["text/html"]]


def _load_again(ip: Any, session: str) -> None:
    """``%load_ext`` after a test unloaded the extension, with the module's settings back."""
    with capture_output():
        ip.run_line_magic("load_ext", "dsh_magics")
    m = magics_of(ip)
    m.default_session = session
    m.live_display = "off"


def test_reload_keeps_the_terminals_and_replaces_the_magics(ip, session: str) -> None:
    before = magics_of(ip)
    ip.run_line_magic("bash_exec", "--timeout 10 export DSH_RELOAD=survives")
    pid = ip.run_line_magic("bash_attach", "").pid
    with capture_output():
        ip.run_line_magic("reload_ext", "dsh_magics")
    after = magics_of(ip)
    assert after is not before
    assert before not in ip.configurables and after in ip.configurables
    assert ip.events.callbacks["post_run_cell"].count(after.post_run_cell) == 1
    assert before.post_run_cell not in ip.events.callbacks["post_run_cell"]
    for name in MAGICS:
        assert ip.find_line_magic(name).__self__ is after
    # the user's shell is the same one, with its state
    after.default_session = session
    after.live_display = "off"
    assert ip.run_line_magic("bash_attach", "").pid == pid
    assert ip.run_line_magic("bash_exec", "--timeout 10 echo $DSH_RELOAD").output == "survives\n"


def test_unload_removes_everything_and_load_restores_it(ip, session: str) -> None:
    with capture_output():
        ip.run_line_magic("unload_ext", "dsh_magics")
    try:
        for name in MAGICS:
            assert ip.find_line_magic(name) is None
        assert ip.find_cell_magic("bash_exec") is None
        for fmt in _formatters(ip):
            for typ in (Result, TerminalInfo, ReadResult):
                assert typ not in fmt.type_printers
        assert not any(type(c).__name__ == "BashMagics" for c in ip.configurables)
    finally:
        _load_again(ip, session)
    assert ip.find_line_magic("bash_exec") is not None
    for fmt in _formatters(ip):
        assert Result in fmt.type_printers and TerminalInfo in fmt.type_printers


def test_an_add_on_that_fails_to_unload_is_logged_and_the_rest_unloads(
    ip, session: str, monkeypatch, caplog
) -> None:
    """issue 34 §4: the failure is said (a warning with its traceback), not
    swallowed, and the magics and formatters still go."""
    from dsh_magics.widgets import panel_magic

    def broken(_ip: Any) -> None:
        raise RuntimeError("add-on unload failed on purpose")

    monkeypatch.setattr(panel_magic, "unregister", broken)
    try:
        with capture_output(), caplog.at_level("WARNING", logger="dsh_magics.notebook.extension"):
            ip.run_line_magic("unload_ext", "dsh_magics")
        assert ip.find_line_magic("bash_exec") is None
        failed = [r for r in caplog.records if "panel_magic" in r.getMessage()]
        assert failed and failed[0].exc_info is not None
        assert "add-on unload failed on purpose" in caplog.text
    finally:
        monkeypatch.undo()
        _load_again(ip, session)
    assert ip.find_line_magic("bash_exec") is not None


def test_loading_twice_is_harmless(ip, session: str) -> None:
    import dsh_magics

    dsh_magics.load_ipython_extension(ip)  # bypassing %load_ext's own guard
    m = magics_of(ip)
    m.default_session = session
    m.live_display = "off"
    assert sum(type(c).__name__ == "BashMagics" for c in ip.configurables) == 1
    assert (
        sum(
            getattr(cb, "__self__", None) is not None and type(cb.__self__).__name__ == "BashMagics"
            for cb in ip.events.callbacks["post_run_cell"]
        )
        == 1
    )
    assert ip.run_line_magic("bash_exec", "--timeout 10 echo once").output == "once\n"


def test_config_traits_are_settable_with_percent_config(ip, session: str) -> None:
    with capture_output():
        ip.run_line_magic("config", "BashMagics.live_tail = 7")
    assert magics_of(ip).live_tail == 7
    with capture_output() as cap:
        ip.run_line_magic("config", "BashMagics")
    assert "default_session" in cap.stdout and "live_display" in cap.stdout


def test_the_engine_imports_no_presentation() -> None:
    """The engine's values carry no reprs: IPython learns them from the extension."""
    code = (
        "import sys, dsh_magics.terminal, dsh_magics.jobs\n"
        "bad = [m for m in sys.modules if m.startswith('dsh_magics.notebook')"
        " or m.startswith('IPython')]\n"
        "assert not bad, bad\n"
        "from dsh_magics.terminal import Result\n"
        "assert '_repr_html_' not in vars(Result)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr


def test_exit_steps_go_through_the_shutdown_module(ip, session: str) -> None:
    """The extension's only exit step (stop live views) is a VIEWS step of
    dsh_magics.shutdown, registered on load and removed on unload."""
    from dsh_magics import shutdown

    def views_steps() -> list[object]:
        return [e for e in shutdown._callbacks if e[0] == shutdown.VIEWS]

    before = len(views_steps())
    with capture_output():
        ip.run_line_magic("unload_ext", "dsh_magics")
    assert len(views_steps()) == before - 1
    _load_again(ip, session)
    assert len(views_steps()) == before
