"""The browser harness itself: a widget check passes only when the widget is really drawn.

A trivial widget notebook is rendered twice: once normally (the ipywidgets view
must appear in the DOM, and a value set from Python must reach it), and once
with the ipywidgets frontend extension blocked, where the same check must fail.
Without the second half, a harness that accepted any output would look fine.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from .lab import WidgetNotRendered

pytestmark = pytest.mark.browser

SLIDER_SRC = (
    "import ipywidgets as w\n"
    "s = w.IntSlider(value=3, description='probe')\n"
    "s.add_class('lab-probe')\n"
    "s"
)


@pytest.fixture(scope="module")
def probe_notebook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_code_cell(SLIDER_SRC),
        nbformat.v4.new_code_cell("s.value = 7\nprint('set', s.value)"),
    ]
    path = tmp_path_factory.mktemp("probe") / "probe.ipynb"
    nbformat.write(nb, path)
    return path


def test_widget_renders_and_updates(open_notebook, probe_notebook: Path) -> None:
    nb = open_notebook(probe_notebook, name="probe-ok.ipynb")
    nb.run_all()
    slider = nb.wait_for_widget(0, css_class="lab-probe")
    nb.wait_for_text("set 7")
    # The value set by the second cell is what the drawn slider shows.
    readout = slider.locator(".widget-readout")
    assert readout.inner_text().strip() == "7"
    nb.screenshot("harness-probe-rendered")


def test_render_check_fails_without_widget_frontend(open_notebook, probe_notebook: Path) -> None:
    nb = open_notebook(probe_notebook, name="probe-blocked.ipynb", block_widgets=True)
    nb.run_all()
    with pytest.raises(WidgetNotRendered):
        nb.wait_for_widget(0, css_class="lab-probe", timeout=20)
    nb.screenshot("harness-probe-no-frontend")
