"""The tool-schema inspector in real JupyterLab + Debian Chromium.

Runs ``notebooks/tool-schemas.ipynb`` (a copy) and drives the interactive
widget of its first cell: background off removes ``run_in_background`` from
the rendered table, a sandbox mode adds ``sandbox_permissions`` and
``justification``, and an escalation shows its outcome.  Every assertion reads
the DOM the browser drew; when the widget frontend is missing,
``wait_for_widget`` fails (see ``test_lab_harness.py`` for that check itself).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .lab import NotebookPage, wait_until

pytestmark = pytest.mark.browser

NOTEBOOK = Path(__file__).resolve().parents[2] / "notebooks" / "tool-schemas.ipynb"


def _rows(root: Any) -> dict[str, str]:
    """Parameter name -> status, as drawn in the Parameters pane."""
    cells = root.locator(".dsh-pane-params tr.dsh-param").evaluate_all(
        "els => els.map(e => [e.getAttribute('data-param'), e.getAttribute('data-status')])"
    )
    return {name: status for name, status in cells}


def _present(root: Any) -> list[str]:
    return [n for n, s in _rows(root).items() if s != "removed"]


def _category(root: Any) -> str | None:
    loc = root.locator(".dsh-pane-escalation [data-category]")
    return loc.first.get_attribute("data-category") if loc.count() else None


def test_inspector_widget_in_jupyterlab(open_notebook) -> None:
    nb: NotebookPage = open_notebook(NOTEBOOK)
    nb.run_all(timeout=300)
    idx = nb.cell_with_source("insp = dsh_magics.inspect()")
    root = nb.wait_for_widget(idx, css_class="dsh-inspector", timeout=60)
    # The badge settles (live ready, or the model with the reason) without anyone waiting on it.
    badge = root.locator(".dsh-ctl-badge")
    wait_until(
        lambda: (
            badge.locator("[data-source]").count() == 1
            and badge.locator("[data-loading]").count() == 0
            and "0.1.0-rc.8" in badge.inner_text()
        ),
        120,
        message="the source badge to settle",
    )
    source = badge.locator("[data-source]").get_attribute("data-source")
    assert source in ("live", "model")
    assert _rows(root)["run_in_background"] == "same"
    # The tour's static outputs rendered too (tables, not blank).
    nb.wait_for_text("4 distinct schemas")
    nb.screenshot("inspector-1-initial", element=root)

    # 1. enableRunInBackground off: run_in_background leaves the table (kept only as a removed row).
    root.locator(".dsh-ctl-background input[type=checkbox]").click()
    wait_until(
        lambda: "run_in_background" not in _present(root),
        20,
        message="run_in_background to disappear from the rendered table",
    )
    assert _rows(root)["run_in_background"] == "removed"
    assert root.locator(".dsh-pane-params del", has_text="run_in_background").count() == 1
    nb.screenshot("inspector-2-background-off", element=root)

    # 2. A sandbox mode: the escalation fields appear, highlighted as added.
    root.locator(".dsh-ctl-sandbox select").select_option(label="read-only")
    wait_until(
        lambda: {"sandbox_permissions", "justification"} <= set(_present(root)),
        20,
        message="sandbox_permissions and justification to appear",
    )
    rows = _rows(root)
    assert rows["sandbox_permissions"] == "added" and rows["justification"] == "added"
    assert "run_in_background" not in _present(root)
    nb.screenshot("inspector-3-sandbox-read-only", element=root)

    # 3. One escalation: the simulator follows the executor's mode (read-only) and grants
    #    workspace-write; under danger-full-access both advertised targets are refused.
    root.locator(".lm-TabBar-tab", has_text="Escalation").click()
    wait_until(lambda: _category(root) == "granted", 20, message="the granted outcome")
    result = root.locator(".dsh-pane-escalation .dsh-result")
    assert "granted for this one call" in result.inner_text()
    nb.screenshot("inspector-4-escalation-granted", element=root)
    root.locator(".dsh-esc-mode select").select_option(label="danger-full-access")
    wait_until(lambda: _category(root) == "not-wider", 20, message="the not-wider outcome")
    assert "refused: not strictly wider" in result.inner_text()
    pane = root.locator(".dsh-pane-escalation")
    assert pane.locator('[data-target][data-reachable="0"]').count() == 2
    assert "neither can ever succeed" in pane.inner_text()
    steps = pane.locator(".dsh-chain li").evaluate_all(
        "els => els.map(e => [e.getAttribute('data-step'), e.getAttribute('data-passed')])"
    )
    assert steps[:2] == [["validate", "passed"], ["strictly-wider", "failed"]]
    message_source = pane.locator("[data-message-source]").get_attribute("data-message-source")
    assert message_source == source  # live shows the harness's message, the model our wording
    nb.screenshot("inspector-5-escalation-danger-full-access", element=root)
