"""Command text and output show literally in real JupyterLab: no math, no markup.

JupyterLab typesets ``$…$``, ``$$…$$`` and ``\\(…\\)`` in HTML outputs and in
widget HTML, and HTML outputs would interpret ``<tags>`` and ``&amp;``. One
notebook runs commands and prints output full of all of these, through every
HTML view the project draws: a job's live display, a streamed ``--wait``, a
result, ``%bash_read``, ``%bash_list`` (a cwd), the panel and the inspector.
Every one must show the text exactly (``innerText``) and hold no math element.
A control cell shows the same kind of text in plain HTML and must be typeset,
so the check would fail if our markup were typeset too.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest

from ..conftest import Gate
from .lab import NotebookPage, wait_until

pytestmark = pytest.mark.browser

REPO = Path(__file__).resolve().parents[2]
LIT = r"p $a$ q $$b$$ r \(c\) s <i>t</i> u &amp; v"
DIRNAME = r"d $x$ $$y$$ \(z\) <b> &amp; e"  # a cwd (no slash in a directory name)
MATH = "mjx-container, .MathJax, .MathJax_Display, .MathJax_Preview, math"

CELLS = {
    "load": "%load_ext dsh_magics",
    "result": f"%bash_exec --timeout 20 echo '{LIT}'",
    # the job waits at a gate the test opens once the live area showed its first line
    "job": f"%bash_exec --session bg echo '{LIT}'; cat job.gate; echo 'job $done$'",
    "wait": f"%bash_exec --wait echo '{LIT}'",
    "read": "%bash_read --lines 3",
    "cwd": (
        f"import os\nos.makedirs({DIRNAME!r}, exist_ok=True)\n"
        f"%bash_exec --session lit --timeout 20 cd '{DIRNAME}' && echo '{LIT}'"
    ),
    "list": "%bash_list",
    "panel": "p = %bash_panel --session lit\np",
    "inspector": (
        "import dsh_magics, pathlib\n"
        f"src = pathlib.Path({str(REPO / 'tests/widgets/fixtures/inspector_catalog.md')!r})"
        ".read_text()\n"
        "pathlib.Path('lit-catalog.md').write_text(src.replace("
        f"'Runs a shell command for the test suite (fixture wording).', {LIT!r}))\n"
        "insp = dsh_magics.inspect(source='model', live=False, catalog='lit-catalog.md')\ninsp"
    ),
    "control": (
        "from IPython.display import HTML\n"
        "HTML('<div class=\"dsh-control\">math: $x^2$ and \\\\(y\\\\)</div>')"
    ),
}


@pytest.fixture(scope="module")
def literal_notebook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS.values()]
    path = tmp_path_factory.mktemp("literal") / "literal.ipynb"
    nbformat.write(nb, path)
    return path


def _index(name: str) -> int:
    return list(CELLS).index(name)


def _math_in(nb: NotebookPage, name: str) -> int:
    return int(nb.cell(_index(name)).locator(".jp-OutputArea").locator(MATH).count())


def _text(nb: NotebookPage, name: str) -> str:
    return str(nb.cell(_index(name)).locator(".jp-OutputArea").inner_text())


def _wait_text(nb: NotebookPage, name: str, *lines: str, timeout: float = 30) -> str:
    """Wait until the cell's output shows each of ``lines`` as a whole line."""

    def has_all() -> str | None:
        text = _text(nb, name)
        shown = [line.strip() for line in text.splitlines()]
        return text if all(line in shown for line in lines) else None

    try:
        return wait_until(has_all, timeout, message=f"{lines} in the {name} cell")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; it shows:\n{_text(nb, name)}") from None


def test_every_html_view_shows_text_literally(open_notebook, literal_notebook: Path, lab) -> None:
    gate = Gate(lab.root / "job.gate")  # the kernel's cwd: the notebook's directory
    nb: NotebookPage = open_notebook(literal_notebook)
    nb.run_all(timeout=240)

    # The typesetter is active in this page: plain HTML with the same kind of text is math.
    try:
        wait_until(lambda: _math_in(nb, "control") > 0, 60, message="the control cell typeset")
    except AssertionError as exc:
        shown = "\n".join(f"[{name}] {_text(nb, name)[-1500:]}" for name in CELLS)
        raise AssertionError(f"{exc}; the outputs:\n{shown}") from None

    header = f"$ echo '{LIT}'"
    _wait_text(nb, "result", header, LIT)
    job_header = f"{header}; cat job.gate; echo 'job $done$'"
    _wait_text(nb, "job", job_header, LIT)  # while it runs
    gate.open()
    _wait_text(nb, "job", job_header, LIT, "job $done$")
    _wait_text(nb, "wait", header, LIT)
    _wait_text(nb, "read", LIT)
    _wait_text(nb, "cwd", LIT)
    listing = _text(nb, "list")
    assert f"/{DIRNAME}\t" in listing or f"/{DIRNAME}\n" in listing, listing

    panel = nb.wait_for_widget(_index("panel"), css_class="dsh-panel", timeout=60)
    wait_until(
        lambda: LIT in panel.locator(".dsh-panel-out").inner_text()
        and DIRNAME in panel.locator(".dsh-panel-terminals").inner_text()
        and f"cd '{DIRNAME}' && echo" in panel.locator(".dsh-panel-jobs").inner_text(),
        30,
        message="the panel's output, cwd and job command",
    )

    insp: Any = nb.wait_for_widget(_index("inspector"), css_class="dsh-inspector", timeout=60)
    insp.locator(".lm-TabBar-tab", has_text="Catalog").click()
    wait_until(
        lambda: LIT in insp.locator(".dsh-pane-catalog").inner_text(),
        30,
        message="the catalog description in the inspector",
    )
    nb.screenshot("literal-text")

    for name in CELLS:
        if name != "control":
            assert _math_in(nb, name) == 0, f"math typeset in the {name} cell: {_text(nb, name)}"
