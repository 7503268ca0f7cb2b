"""A group command's HTML keeps literal text literal in real JupyterLab (issue 35 §2).

Three ``cmd:`` members (one of them named with markup and math in its target text)
print ``<b>x</b>``, ``$x^2$`` and ``&amp;``. Every group view shows them exactly as
typed (``innerText``) and holds no math and no markup element of theirs: the live
area while the members wait at their gates, the same area once they ended (table and
merged output), ``%bash_wait`` with ``--diff``, ``%bash_read`` and ``%bash_list`` on
the group. A control cell shows the same kind of text in plain HTML and must be
typeset, so the check would fail if the group's markup were typeset too.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from ..conftest import Gate
from .lab import NotebookPage, wait_until

pytestmark = pytest.mark.browser

LIT = "<b>x</b> $x^2$ &amp; \\(y\\)"
NAMED = "cmd:env 'GL=<b>t</b>&amp;$z^2$' bash --noprofile --norc -i"
MEMBERS = ["cmd:env GL=1 bash --noprofile --norc -i", "cmd:env GL=2 bash --noprofile --norc -i", NAMED]
ON = " ".join(f'--on "{m}"' for m in MEMBERS)
MATH = "mjx-container, .MathJax, .MathJax_Display, .MathJax_Preview, math"

CELLS = {
    "load": "%load_ext dsh_magics",
    # each member waits at a gate of its own (its GL in the name) until the test opens it
    # (GATES: the lab's root, where the test makes them; the members' shells start elsewhere)
    "live": f"g = %bash_exec {ON} echo '{LIT}'; cat \"GATES/gl-$(printf %s \"$GL\" | md5sum | cut -c1-8).gate\"; "
    "echo 'end $e$ <i>i</i>'\ng",
    "wait": "%bash_wait $g --diff",
    "differ": f"%bash_exec {ON} --wait --diff echo '{LIT}'; echo \"member $GL\"",
    "read": "%bash_read $g --lines 2",
    "list": "%bash_list $g",
    "control": (
        "from IPython.display import HTML\n"
        "HTML('<div class=\"dsh-control\">math: $x^2$ and \\\\(y\\\\) <b>bold</b></div>')"
    ),
}


def _gate_name(value: str) -> str:
    import hashlib

    return f"gl-{hashlib.md5(value.encode()).hexdigest()[:8]}.gate"


@pytest.fixture(scope="module")
def group_notebook(tmp_path_factory: pytest.TempPathFactory, lab) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    sources = [src.replace("GATES/", f"{lab.root}/") for src in CELLS.values()]
    nb.cells = [nbformat.v4.new_code_cell(src) for src in sources]
    path = tmp_path_factory.mktemp("group-literal") / "group_literal.ipynb"
    nbformat.write(nb, path)
    return path


def _index(name: str) -> int:
    return list(CELLS).index(name)


def _out(nb: NotebookPage, name: str):  # noqa: ANN202 - a Playwright locator
    return nb.cell(_index(name)).locator(".jp-OutputArea")


def _text(nb: NotebookPage, name: str) -> str:
    return str(_out(nb, name).inner_text())


def _wait_text(nb: NotebookPage, name: str, *parts: str, timeout: float = 60) -> str:
    def has_all() -> str | None:
        text = _text(nb, name)
        return text if all(p in text for p in parts) else None

    try:
        return wait_until(has_all, timeout, message=f"{parts} in the {name} cell")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; it shows:\n{_text(nb, name)}") from None


def _no_markup_of_theirs(nb: NotebookPage, name: str) -> None:
    out = _out(nb, name)
    assert out.locator(MATH).count() == 0, f"math typeset in the {name} cell: {_text(nb, name)}"
    for tag in ("b", "i"):  # the members' <b>x</b>, <b>t</b>, <i>i</i> as elements
        made = [t for t in out.locator(tag).all_inner_texts() if t in ("x", "t", "i")]
        assert not made, f"<{tag}> from a member's text in the {name} cell: {made}"


def test_group_views_show_member_text_literally(open_notebook, group_notebook: Path, lab) -> None:
    gates = [Gate(lab.root / _gate_name(v)) for v in ("1", "2", "<b>t</b>&amp;$z^2$")]
    nb: NotebookPage = open_notebook(group_notebook)
    try:
        # Run All, not waited for here: the wait cell runs until the gates open
        nb.page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); return true; }")
        # the live area while the members wait at their gates: rows with their last line
        live = _wait_text(nb, "live", "0/3 done", LIT, "<b>t</b>&amp;$z^2$", "running", timeout=120)
        assert f"echo '{LIT}'" in live, live
        _no_markup_of_theirs(nb, "live")
        nb.screenshot("group-literal-running")
    finally:
        try:
            for gate in gates:
                gate.open(timeout=120)
        finally:
            for gate in gates:
                Path(gate.path).unlink()
    nb.wait_cells_done(timeout=240)
    # The typesetter is active in this page: plain HTML with the same kind of text is math.
    try:
        wait_until(lambda: _out(nb, "control").locator(MATH).count() > 0, 60, message="the control cell typeset")
    except AssertionError as exc:
        shown = "\n".join(f"[{name}] {_text(nb, name)[-1500:]}" for name in CELLS)
        raise AssertionError(f"{exc}; the outputs:\n{shown}") from None

    # the same area once they ended: the table and the merged output, literal
    final = _wait_text(nb, "live", "3/3 done", "end $e$ <i>i</i>", "exit 0: ", timeout=120)
    assert f"{LIT}\nend $e$ <i>i</i>" in final, final
    assert NAMED in final, final
    for name, parts in {
        "wait": (LIT, "end $e$ <i>i</i>", "(3)"),
        "differ": (LIT, "member 1", "-member 1", "+member 2", "+member <b>t</b>&amp;$z^2$"),
        "read": ("end $e$ <i>i</i>",),
        "list": (NAMED, "end $e$ <i>i</i>"),
    }.items():
        _wait_text(nb, name, *parts)
    nb.screenshot("group-literal-done")
    for name in CELLS:
        if name not in ("control", "load"):
            _no_markup_of_theirs(nb, name)
