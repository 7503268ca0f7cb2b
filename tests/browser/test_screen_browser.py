"""A full-screen program in real JupyterLab: ``less`` in a job's live area,
``%bash_screen`` and the panel show the terminal's screen, with literal text
(``$x$``, ``<i>``) and no math element; quitting less brings the job's result
(with less's last screen) back into the same area. A control cell with the same kind of text in plain
HTML is typeset, so the check would fail if our markup were typeset too."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest

from .lab import NotebookPage, wait_until

pytestmark = pytest.mark.browser

ROW = "row-{:03d} $x$ <i>it</i> \\(y\\) &amp;"
MATH = "mjx-container, .MathJax, .MathJax_Display, .MathJax_Preview, math"

CELLS = {
    "load": "%load_ext dsh_magics",
    "file": (
        "import pathlib\n"
        f"pathlib.Path('paged.txt').write_text(''.join({ROW!r}.format(i) + '\\n' for i in range(1, 200)))"
    ),
    "less": "j = %bash_exec --tty less paged.txt",
    # less draws a moment after its job starts: wait for its screen first, or
    # the snapshot can be of a blank screen (failed once in a CI dry run).
    "screen": "r = %bash_wait --until-screen 'row-019' --timeout 30\n%bash_screen",
    "panel": "p = %bash_panel\np",
    "control": (
        "from IPython.display import HTML\n"
        "HTML('<div class=\"dsh-control\">math: $x^2$ and \\\\(y\\\\)</div>')"
    ),
    "quit": "%bash_send --no-enter q\nj.wait(30)\nprint('less quit:', j.status)",
}


@pytest.fixture(scope="module")
def screen_notebook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS.values()]
    path = tmp_path_factory.mktemp("screen") / "screen.ipynb"
    nbformat.write(nb, path)
    return path


def _index(name: str) -> int:
    return list(CELLS).index(name)


def _out(nb: NotebookPage, name: str) -> Any:
    return nb.cell(_index(name)).locator(".jp-OutputArea")


def _text(nb: NotebookPage, name: str) -> str:
    return str(_out(nb, name).inner_text())


def _rows_shown(nb: NotebookPage, name: str, within: str, rows: range) -> bool:
    loc = _out(nb, name).locator(within)
    if not loc.count():
        return False
    shown = [line.rstrip() for line in str(loc.first.inner_text()).splitlines()]
    return all(ROW.format(i) in shown for i in rows)


def test_less_shows_its_screen_literally(open_notebook, screen_notebook: Path) -> None:
    nb: NotebookPage = open_notebook(screen_notebook)
    for name in CELLS:
        if name != "quit":
            nb.run_cell(_index(name), timeout=120)
    try:
        wait_until(
            lambda: _out(nb, "control").locator(MATH).count() > 0,
            60,
            message="the control cell typeset",
        )
        first_rows = range(1, 20)
        for name in ("less", "screen"):
            try:
                wait_until(
                    lambda name=name: _rows_shown(nb, name, ".dsh-screen pre", first_rows),
                    60,
                    message=f"less's rows in the {name} cell",
                )
            except AssertionError as exc:
                raise AssertionError(f"{exc}; it shows:\n{_text(nb, name)[-2000:]}") from None
        assert "full-screen program" in _text(nb, "less")
        panel = nb.wait_for_widget(_index("panel"), css_class="dsh-panel", timeout=60)
        wait_until(
            lambda: panel.locator(".dsh-panel-out .dsh-screen").count() > 0
            and ROW.format(1) in panel.locator(".dsh-panel-out").inner_text(),
            30,
            message="the panel's screen",
        )
        nb.screenshot("screen-less")
        for name in ("less", "screen", "panel"):
            assert _out(nb, name).locator(MATH).count() == 0, f"math in the {name} cell"
            assert _out(nb, name).locator("i").count() == 0, f"an <i> element in the {name} cell"
    finally:
        nb.run_cell(_index("quit"), timeout=60)
    assert "less quit: completed" in _text(nb, "quit")
    # The live area is back to the job's result, in place.
    wait_until(
        lambda: _out(nb, "less").locator(".dsh-screen").count() == 0
        and "exit 0" in _text(nb, "less"),
        30,
        message="the job's final result in the live area",
    )
    final = _text(nb, "less")
    assert "the program's last screen" in final and ROW.format(1) in final.splitlines(), final
    assert _out(nb, "less").locator(MATH).count() == 0
    assert _out(nb, "less").locator("i").count() == 0
    nb.screenshot("screen-less-done")
