"""The terminal panel in a real JupyterLab, driven through headless Chromium.

One notebook, one kernel, one walk through the panel the way a user would:
a multi-line job from a cell shows as its first line and "… (+2 lines)";
type ``echo hello`` and press Send; check the output pane (and the second
display of the same panel) shows it, scrolled to its end; start ``sleep 30``,
see the busy row and an inline ``SESSION_BUSY``, press Interrupt and see the
job settle as interrupted; attach a second session with a cwd and close it.
Every click travels as an ipywidgets comm message, the panel's only channel.
Screenshots go to ``$DSH_TEST_OUTPUT/screenshots/panel-*.png`` (a temp dir by default).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import psutil
import pytest

from tests.conftest import pids_with_env

from .lab import NotebookPage, wait_until

pytestmark = pytest.mark.browser

#: A multi-line job in its own terminal, run before the walk starts: its row shows the
#: first line and how many follow, literally (markup and dollars stay text).
MULTI_LINE = "for w in '$a$' '<b>x</b>'; do\n  echo \"$w\"\ndone"
CELLS = [
    "%load_ext dsh_magics",
    "p = %bash_panel\np",
    "p  # the same panel shown a second time",
    f"p.registry.exec('multi', {MULTI_LINE!r});",
]


@pytest.fixture(scope="module")
def panel_notebook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    path = tmp_path_factory.mktemp("panel") / "panel.ipynb"
    nbformat.write(nb, path)
    return path


class PanelDriver:
    """Clicks and reads one rendered panel (a ``.dsh-panel`` widget view)."""

    def __init__(self, nb: NotebookPage, root: Any) -> None:
        self.nb = nb
        self.root = root

    def part(self, cls: str) -> Any:
        return self.root.locator(f".{cls}").first

    def type(self, cls: str, text: str) -> None:
        self.part(cls).locator("input").fill(text)

    def press(self, cls: str) -> None:
        button = self.part(cls)
        wait_until(button.is_enabled, 20, message=f"{cls} enabled")
        button.click()

    def send(self, command: str) -> None:
        self.type("dsh-panel-command", command)
        self.press("dsh-panel-send")

    def output_lines(self) -> list[str]:
        return self.part("dsh-panel-out").inner_text().split("\n")

    def wait(self, css: str, timeout: float = 30, gone: bool = False) -> None:
        """Wait for (or until there is no) element matching ``css`` inside the panel."""
        loc = self.root.locator(css)
        what = f"{'no ' if gone else ''}{css}"
        wait_until(lambda: (loc.count() == 0) if gone else (loc.count() > 0), timeout, message=what)

    def attr(self, css: str, name: str) -> str:
        return str(self.root.locator(css).first.get_attribute(name))


def session_running(session_id: str, argv: list[str]) -> bool:
    """A process of terminal ``session_id`` runs exactly ``argv``.

    Found by the session variable every terminal's processes inherit, not by
    ancestry: under Jupyter the terminals live in the terminal host, which an
    earlier kernel may have started.
    """
    for pid in pids_with_env("DSH_MAGICS_SESSION", session_id):
        try:
            if psutil.Process(pid).cmdline() == argv:
                return True
        except psutil.Error:
            continue
    return False


def test_panel_sends_interrupts_attaches_and_closes(
    open_notebook: Any, panel_notebook: Path
) -> None:
    nb = open_notebook(panel_notebook)
    nb.run_all()
    first = PanelDriver(nb, nb.wait_for_widget(1, css_class="dsh-panel"))
    second = PanelDriver(nb, nb.wait_for_widget(2, css_class="dsh-panel"))
    # This notebook's terminal is preselected before it has even started.
    label = first.part("dsh-panel-session").locator("select option:checked").inner_text()
    label = label.replace("\xa0", " ")  # ipywidgets draws labels with no-break spaces
    assert "panel.ipynb" in label and "this notebook" in label
    # The multi-line job's row: first line, "… (+2 lines)", the whole text as tooltip.
    first.wait('.dsh-panel-jobs tr[data-status="completed"] td.dsh-panel-cmd[data-more="2"]')
    cmd = first.root.locator('.dsh-panel-jobs td.dsh-panel-cmd[data-more="2"]')
    assert cmd.inner_text().replace("\xa0", " ") == "for w in '$a$' '<b>x</b>'; do … (+2 lines)"
    assert cmd.get_attribute("title") == MULTI_LINE
    assert cmd.locator("b").count() == 0 and cmd.locator("mjx-container, .MathJax").count() == 0
    nb.screenshot("panel-1-opened")

    # -- send a command as a job -------------------------------------------------
    first.send("echo hello")
    wait_until(lambda: "hello" in first.output_lines(), 30, message="hello in the output pane")
    first.wait(
        '.dsh-panel-jobs tr[data-status="completed"][data-exit="0"]'
        ':has(td.dsh-panel-cmd:text-is("echo hello"))'
    )
    # The second view of the same panel shows the same thing.
    wait_until(lambda: "hello" in second.output_lines(), 30, message="hello in the second view")

    # The pane follows new output: after a long burst it is scrolled to its end.
    first.send("seq 1 400")
    wait_until(lambda: first.output_lines()[-1:] == ["400"], 30, message="seq output")
    box = first.part("dsh-panel-out").evaluate(
        """el => {
            const c = el.getBoundingClientRect(), p = el.querySelector('pre').getBoundingClientRect();
            return {top: c.top, bottom: c.bottom, preTop: p.top, preBottom: p.bottom};
        }"""
    )
    assert box["preTop"] < box["top"] - 50, box  # the start has scrolled out of view...
    assert box["preBottom"] <= box["bottom"] + 1, box  # ...and the last line is in view
    head = first.part("dsh-panel-outhead")
    assert "401 lines retained · 0 dropped" in head.inner_text()
    nb.screenshot("panel-2-echo-hello")

    # -- a long job: busy row, inline SESSION_BUSY, interrupt ----------------------
    first.send("sleep 30")
    first.wait('.dsh-panel-terminals tr[data-status="busy"]')
    job_id = first.attr('.dsh-panel-terminals tr[data-status="busy"]', "data-job")
    sid = first.attr('.dsh-panel-terminals tr[data-status="busy"]', "data-session")
    assert job_id.startswith("bash-")
    first.wait(f'.dsh-panel-jobs tr[data-job="{job_id}"][data-status="running"]')
    first.send("echo while-busy")
    first.wait('.dsh-notice[data-code="SESSION_BUSY"]')
    assert "SESSION_BUSY" in first.part("dsh-notice").inner_text()
    # Ctrl-C must find the sleep running (not a shell still reading the line).
    wait_until(lambda: session_running(sid, ["sleep", "30"]), 30, message="sleep 30 running")
    nb.screenshot("panel-3-busy")
    first.press("dsh-panel-interrupt")
    first.wait(f'.dsh-panel-jobs tr[data-job="{job_id}"][data-status="interrupted"]')
    first.wait('.dsh-panel-terminals tr[data-status="busy"]', gone=True)
    wait_until(lambda: not session_running(sid, ["sleep", "30"]), 30, message="sleep gone")
    nb.screenshot("panel-4-interrupted")

    # -- attach a second session with a cwd, then close it ---------------------------
    first.type("dsh-panel-attach-id", "second")
    first.type("dsh-panel-attach-cwd", "/tmp")
    first.press("dsh-panel-attach")
    first.wait('.dsh-panel-terminals tr[data-session="second"][data-status="idle"]')
    row = first.root.locator('.dsh-panel-terminals tr[data-session="second"]')
    assert "/tmp" in row.inner_text()
    assert first.part("dsh-panel-session").locator("select").input_value() == "second"
    second.wait('.dsh-panel-terminals tr[data-session="second"]')
    nb.screenshot("panel-5-attached")
    first.press("dsh-panel-close")
    first.wait('.dsh-panel-terminals tr[data-session="second"]', gone=True)
    second.wait('.dsh-panel-terminals tr[data-session="second"]', gone=True)
    selected = first.part("dsh-panel-session").locator("select").input_value()
    assert selected.startswith("panel.ipynb")
    assert "closed &#x27;second&#x27;" not in first.part("dsh-notice").inner_text()
    assert "closed 'second'" in first.part("dsh-notice").inner_text()
    nb.screenshot("panel-6-closed")
    assert not [line for line in nb.console if "pageerror" in line], json.dumps(nb.console[-10:])
