"""A finished job's output box opens at its end in real JupyterLab (issue 36):
the error at the bottom of a long build log is what a reader sees first; and
its colours show (the computed style of a red word), also on a line the
terminal's screen scrolled away long before the job ended.

The text is taller than the box, so it scrolls; its last line must be inside
the visible part of the box and its first line outside it, for a result, a
streamed ``--wait`` and ``%bash_read``.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from .lab import NotebookPage, wait_until

pytestmark = pytest.mark.browser

CELLS = {
    "load": "%load_ext dsh_magics",
    "result": "%bash_exec --timeout 20 seq 1 80; echo LAST-LINE",
    "wait": "%bash_exec --wait seq 1 80; echo LAST-LINE",
    "read": "%bash_read --lines 40",
    "colour": r"%bash_exec --wait printf 'x \e[31mRED-WORD\e[0m \e[1;4mSTRONG\e[0m y\n'",
    # a red line 36 lines above the end: shown (40 lines), long scrolled off the 30-row screen
    "far": r"%bash_exec --timeout 20 printf 'x \e[31mFAR-RED\e[0m y\n'; seq 1 35",
}

# Whether the box's first line and LAST-LINE sit inside against the visible part of the box.
_JS_POSITIONS = """(cell) => {
    const pre = [...cell.querySelectorAll('pre')].find(p => p.textContent.includes('LAST-LINE'));
    if (!pre) return null;
    // the element that scrolls: the <pre> itself, or the box around it
    const box = pre.scrollHeight > pre.clientHeight + 10 ? pre : pre.parentElement;
    const seen = box.getBoundingClientRect();
    const text = pre.firstChild;
    const at = (needle) => {
        const i = text.textContent.indexOf(needle);
        if (i < 0) return null;
        const r = document.createRange();
        r.setStart(text, i);
        r.setEnd(text, i + needle.length);
        const b = r.getBoundingClientRect();
        return b.top >= seen.top - 1 && b.bottom <= seen.bottom + 1;
    };
    return {overflows: box.scrollHeight > box.clientHeight + 10,
            first: at(text.textContent.split(String.fromCharCode(10))[0]), last: at('LAST-LINE')};
}"""


@pytest.fixture(scope="module")
def output_notebook(tmp_path_factory: pytest.TempPathFactory) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS.values()]
    path = tmp_path_factory.mktemp("output") / "output.ipynb"
    nbformat.write(nb, path)
    return path


def test_a_long_result_opens_at_its_end(open_notebook, output_notebook: Path) -> None:
    nb: NotebookPage = open_notebook(output_notebook)
    nb.run_all(timeout=180)
    for name in ("result", "wait", "read"):
        cell = nb.cell(list(CELLS).index(name))

        def positions(cell=cell) -> dict | None:  # type: ignore[type-arg]
            got = cell.evaluate(_JS_POSITIONS)
            return got if got and got["last"] is not None else None

        try:
            got = wait_until(positions, 30, message=f"the {name} cell's output box")
        except AssertionError as exc:
            raise AssertionError(f"{exc}; it shows:\n{cell.inner_text()[-800:]}") from None
        assert got == {"overflows": True, "first": False, "last": True}, (name, got)
    nb.screenshot("output-at-its-end")


def test_a_red_word_is_red(open_notebook, output_notebook: Path) -> None:
    nb: NotebookPage = open_notebook(output_notebook, name="colour.ipynb")
    nb.run_all(timeout=180)
    cell = nb.cell(list(CELLS).index("colour"))

    def styles() -> dict | None:  # type: ignore[type-arg]
        return cell.evaluate(
            """(cell) => {
                const pick = (word) => [...cell.querySelectorAll('.dsh-result pre span')]
                    .find(s => s.textContent === word);
                const red = pick('RED-WORD'), strong = pick('STRONG');
                if (!red || !strong) return null;
                const r = getComputedStyle(red), s = getComputedStyle(strong);
                return {red: r.color, weight: s.fontWeight, line: s.textDecorationLine};
            }"""
        )

    try:
        got = wait_until(styles, 30, message="the coloured words")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; it shows:\n{cell.inner_text()[-800:]}") from None
    assert got == {"red": "rgb(205, 0, 0)", "weight": "700", "line": "underline"}, got
    assert "x RED-WORD STRONG y" in cell.inner_text()
    far = nb.cell(list(CELLS).index("far"))

    def far_red() -> str | None:
        return far.evaluate(  # type: ignore[no-any-return]
            """(cell) => {
                const s = [...cell.querySelectorAll('.dsh-result pre span')].find(s => s.textContent === 'FAR-RED');
                return s ? getComputedStyle(s).color : null;
            }"""
        )

    try:
        colour = wait_until(far_red, 30, message="the red word above the screen's rows")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; it shows:\n{far.inner_text()[-800:]}") from None
    assert colour == "rgb(205, 0, 0)"
    assert "x FAR-RED y" in far.inner_text()
