"""``notebooks/tool-schemas.ipynb`` executed with nbclient, outputs checked.

The guided tour must run top to bottom in a fresh kernel and show: the four
variants, what ``enableRunInBackground`` removes, what a sandboxing executor
adds and costs, the escalation outcomes, the eras and the foreground-only
proposal, and the two live eras side by side (by length and SHA-256).  The committed copy must carry real outputs of such a run.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.kernel

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "tool-schemas.ipynb"


def _text(cell: Any) -> str:
    """All text a code cell produced: streams, and text/plain of rich outputs."""
    parts = []
    for out in cell.get("outputs", []):
        if out.output_type == "stream":
            parts.append(out.text)
        elif "data" in out:
            parts.append(out.data.get("text/plain", ""))
    return "\n".join(parts)


def _cell(nb: Any, needle: str) -> Any:
    return next(c for c in nb.cells if c.cell_type == "code" and needle in c.source)


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> Any:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs = []
    work = tmp_path_factory.mktemp("nb")
    NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        store_widget_state=False,
        resources={"metadata": {"path": str(work)}},
    ).execute()
    return nb


def test_runs_without_errors(executed: Any) -> None:
    for cell in executed.cells:
        if cell.cell_type == "code":
            assert not [o for o in cell.outputs if o.output_type == "error"], cell.source
            assert cell.outputs, f"cell produced nothing: {cell.source[:60]!r}"


def test_widget_cell_carries_widget_html_and_text(executed: Any) -> None:
    out = _cell(executed, "insp = dsh_magics.inspect()").outputs[0]
    assert {"application/vnd.jupyter.widget-view+json", "text/html", "text/plain"} <= set(out.data)
    assert (
        'class="dsh-params"' in out.data["text/html"]
        and 'class="dsh-matrix"' in out.data["text/html"]
    )
    # The display was updated once the source settled: it no longer says "loading".
    assert "loading" not in out.data["text/plain"].splitlines()[0]


def test_four_variants(executed: Any) -> None:
    assert "8 configurations, 4 distinct schemas" in _text(
        _cell(executed, 'tour.section("matrix")')
    )
    lines = _text(_cell(executed, "for background, sandbox in variants")).splitlines()
    by_variant = {ln[0]: ln for ln in lines if ln[:1] in "ABCD"}
    assert set(by_variant) == set("ABCD")
    assert "run_in_background, sandbox_permissions, justification" in by_variant["B"]
    assert by_variant["C"].rstrip().endswith("command, description, timeoutMs, workdir")
    assert "sandbox_permissions" in by_variant["D"] and "run_in_background" not in by_variant["D"]


def test_background_off_removes_run_in_background(executed: Any) -> None:
    params = _text(_cell(executed, 'tour.section("params")'))
    assert re.search(r"^−\s+run_in_background\s+boolean", params, re.M)
    desc = _text(_cell(executed, 'tour.section("description")'))
    assert re.search(r"^\s+\+ background off", desc, re.M)
    assert re.search(r"^\s+− background on", desc, re.M)


def test_sandboxing_executor_cost(executed: Any) -> None:
    out = _text(_cell(executed, 'tour.set(preset="dsh-base", baseline="catalog-default")'))
    # Lengths are facts: the escalation paragraph is 1011 characters.
    assert "description: 825 -> 1836 chars (+1011)" in out
    m = re.search(
        r"whole tool:\s+(\d+) -> (\d+) chars \(\+(\d+)\), ≈(\d+) -> ≈(\d+) tokens \(\+(\d+)\)", out
    )
    assert m and int(m.group(2)) - int(m.group(1)) == int(m.group(3)) > 1011
    assert re.search(r'^\+\s+"sandbox_permissions": \{$', out, re.M)


def test_escalation_outcomes(executed: Any) -> None:
    out = _text(_cell(executed, "for label, inputs in scenarios.items()"))
    expected = {
        "read-only asks for workspace-write": "granted",
        "the user rejects": "rejected",
        "the prompt is cancelled": "cancelled",
        "nobody can answer": "unavailable",
        "policy never": "rejected",
        "no approval service": "no-approver",
        "no agent on the call": "no-agent",
        "request without justification": "invalid-args",
        "justification without request": "invalid-args",
        "asks for the mode it already has": "not-wider",
    }
    for label, category in expected.items():
        assert re.search(rf"^{re.escape(label)}\s+{category}\s", out, re.M), label
    dfa = _text(_cell(executed, 'tour.set(preset="dsh-base", sandbox="danger-full-access")'))
    assert "refused: not strictly wider than the standing mode [not-wider]" in dfa
    assert "neither can ever succeed" in dfa


def test_eras_and_the_foreground_only_proposal(executed: Any) -> None:
    out = _text(_cell(executed, "for era in ERAS"))
    rows = {ln.split()[0]: ln for ln in out.splitlines() if ln.strip()}
    assert "tools: bash, bash_kill, bash_output" in rows["2026-06-12"]
    assert "tools: bash, job_kill, job_list, job_output" in rows["2026-08-13"]
    assert re.search(
        r"tools: bash\s+bash: command, description, timeoutMs, workdir$",
        rows["rfc-foreground-only"],
    )
    assert "tools in rfc-foreground-only: bash" in _text(_cell(executed, 'tour.section("eras")'))
    na = _text(_cell(executed, 'tour.set(era="2026-06-12").view.inputs'))
    assert "enable_run_in_background   applicable=False" in na


def test_magic_text_rendering(executed: Any) -> None:
    out = _text(_cell(executed, "%bash_schema"))
    assert "configuration: bg=off sandbox=read-only era=2026-07-15" in out
    assert "tools in 2026-07-15: bash, task_kill, task_list, task_output" in out


def test_committed_notebook_has_real_outputs() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.outputs for c in code), "commit the notebook with the outputs of a real run"
    assert [c.execution_count for c in code] == list(range(1, len(code) + 1))
    assert not [o for c in code for o in c.outputs if o.output_type == "error"]
    # No saved widget state: viewers then fall back to the static HTML instead of
    # trying to load the widget manager from a CDN (blank when offline).
    assert "widgets" not in nb.metadata


def test_nbconvert_html_shows_the_static_inspector() -> None:
    from nbconvert import HTMLExporter

    body, _ = HTMLExporter().from_filename(str(NOTEBOOK))
    start = body.index("insp</span>")
    widget_output = body[start : body.index("jp-MarkdownCell", start)]
    for marker in ('class="dsh-params"', 'class="dsh-matrix"', 'data-section="escalation"'):
        assert marker in widget_output


NODE = shutil.which("node") is not None and shutil.which("npm") is not None
SIDE_BY_SIDE = 'eras = ("2026-07-15", "2026-08-13")'


def _check_side_by_side(out: str, live: bool) -> None:
    assert re.search(r"fragment base\s+667\s+(\w{12})\s+667\s+\1\s+same$", out, re.M)
    assert re.search(
        r"fragment background-on\s+161\s+99e10ad48a4c\s+158\s+9f6386d70f07\s+differs$", out, re.M
    )
    assert re.search(
        r"whole description\s+828\s+611c8badb34b\s+825\s+f7b37227848f\s+differs$", out, re.M
    )
    assert re.search(r"whole description\s+1839\s+\w{12}\s+1836\s+\w{12}\s+differs$", out, re.M)
    assert re.search(r"param run_in_background\s+123\s+\w{12}\s+120\s+\w{12}\s+differs$", out, re.M)
    if live:
        assert "2026-07-15 (live 0.0.1-rc.1)" in out and "2026-08-13 (live 0.1.0-rc.8)" in out


def test_two_live_eras_side_by_side(executed: Any) -> None:
    _check_side_by_side(_text(_cell(executed, SIDE_BY_SIDE)), live=NODE)
    d = _text(_cell(executed, "d = diff(schema("))
    assert "fragments changed: background-on" in d
    assert re.search(r"^params changed:\s+run_in_background$", d, re.M)
    assert "1804 -> 1810 chars (+6)" in d
    assert "tools added:       task_kill, task_list, task_output" in d
    if NODE:
        assert "(texts compared: exact)" in d
    eras = _text(_cell(executed, 'tour.set(era="2026-07-15", preset="catalog-default"'))
    assert "2026-07-15: bash, task_kill, task_list, task_output [live (0.0.1-rc.1)]" in eras
    assert "2026-08-13: bash, job_kill, job_list, job_output [live (0.1.0-rc.8)]" in eras
    assert "2026-07-11: bash, bash_kill, bash_output [modelled]" in eras


def test_committed_side_by_side_was_recorded_live() -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    _check_side_by_side(_text(_cell(nb, SIDE_BY_SIDE)), live=True)
