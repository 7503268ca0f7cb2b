"""Answering prompts from the terminal panel in a real JupyterLab (headless
Chromium): a ``y/N`` prompt through the answer box, then a password prompt
through the password box that replaces it; the password shows nowhere on the
page, and the recent jobs say who typed what.

Screenshots go to ``$DSH_TEST_OUTPUT/screenshots/answer-*.png`` (a temp dir by default).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from .lab import NotebookPage, wait_until
from .test_panel_browser import PanelDriver

pytestmark = pytest.mark.browser

PASSWORD = "br0wser-Pw-31"
CELLS = [
    "%load_ext dsh_magics",
    "p = %bash_panel\np",
    "%bash_exec --tty read -p 'Continue? [y/N] ' a; echo \"answer=$a\"",
    "%bash_exec --tty read -s -p 'Password: ' pw; echo; echo \"length=${#pw}\"",
]


@pytest.fixture(scope="module")
def answer_notebook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    path = tmp_path_factory.mktemp("answer") / "answer.ipynb"
    nbformat.write(nb, path)
    return path


def _visible(panel: PanelDriver, cls: str) -> bool:
    return bool(panel.part(cls).is_visible())


def test_panel_answers_a_prompt_and_a_password(open_notebook: Any, answer_notebook: Path) -> None:
    nb: NotebookPage = open_notebook(answer_notebook)
    for i in range(3):
        nb.run_cell(i)
    panel = PanelDriver(nb, nb.wait_for_widget(1, css_class="dsh-panel"))

    # -- y/N through the answer box ------------------------------------------------
    panel.wait(".dsh-panel-awaiting", 30)
    assert "Continue? [y/N]" in panel.part("dsh-panel-awaiting").inner_text()
    assert _visible(panel, "dsh-panel-answer") and not _visible(panel, "dsh-panel-password")
    nb.screenshot("answer-1-prompt")
    panel.type("dsh-panel-answer", "y")
    panel.press("dsh-panel-type")
    wait_until(lambda: "answer=y" in panel.output_lines(), 30, message="the job got the answer")
    panel.wait('.dsh-panel-jobs tr[data-status="completed"]')
    wait_until(
        lambda: "panel: y" in panel.part("dsh-panel-jobs").inner_text(), 30, message="input listed"
    )

    # -- a password through the password box ----------------------------------------
    nb.run_cell(3)
    wait_until(lambda: _visible(panel, "dsh-panel-password"), 30, message="password box shown")
    assert not _visible(panel, "dsh-panel-answer")
    assert "hidden answer" in panel.part("dsh-panel-awaiting").inner_text()
    nb.screenshot("answer-2-password")
    panel.type("dsh-panel-password", PASSWORD)
    panel.press("dsh-panel-send-hidden")
    wait_until(
        lambda: f"length={len(PASSWORD)}" in panel.output_lines(), 30, message="the job got it"
    )
    wait_until(
        lambda: "panel: [secret]" in panel.part("dsh-panel-jobs").inner_text(),
        30,
        message="redacted input listed",
    )
    assert panel.part("dsh-panel-password").locator("input").input_value() == ""
    nb.screenshot("answer-3-done")
    assert PASSWORD not in nb.page.content()
    assert not [line for line in nb.console if "pageerror" in line], json.dumps(nb.console[-10:])
