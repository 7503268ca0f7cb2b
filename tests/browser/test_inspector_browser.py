"""The tool-schema inspector in real JupyterLab + Debian Chromium.

Runs ``notebooks/tool-schemas.ipynb`` (a copy) and drives the interactive
widget of its first cell: background off removes ``run_in_background`` from
the rendered table, a sandbox mode adds ``sandbox_permissions`` and
``justification``, an escalation shows its outcome, and switching the era to
2026-07-15 draws that era's exact live text (a length only it has).  Every assertion reads
the DOM the browser drew; when the widget frontend is missing,
``wait_for_widget`` fails (see ``test_lab_harness.py`` for that check itself).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import pytest

from dsh_magics.harness import text_facts

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

    # 4. The task era, live from its own package (0.0.1-rc.1): the exact description drawn
    #    has a length only that published text has (828 characters, 3 more than now), and
    #    its background fragment is marked as differing from the current era's.
    if shutil.which("node") is None:
        return  # no live bridge on this machine: the model shows no exact text to measure
    assert source == "live"
    root.locator(".dsh-ctl-background input[type=checkbox]").click()
    root.locator(".dsh-ctl-sandbox select").select_option(label="none (unconfined executor)")
    root.locator(".dsh-ctl-baseline select").select_option(label="this configuration in 2026-08-13")
    root.locator(".dsh-ctl-era select").select_option(label="2026-07-15")
    wait_until(
        lambda: (
            "@0.0.1-rc.1" in badge.inner_text()
            and badge.locator('[data-source="live"]').count() == 1
        ),
        120,
        message="the badge to say live from 0.0.1-rc.1",
    )
    root.locator(".lm-TabBar-tab", has_text="Description").click()
    desc = root.locator('.dsh-pane-description .dsh-desc[data-exact="1"] mark[data-fragment]')
    wait_until(lambda: desc.count() == 2, 20, message="two exact fragments (base, background)")
    drawn = desc.evaluate_all(
        "els => els.map(e => [e.dataset.fragment, e.dataset.status, e.childNodes[1].textContent.slice(1)])"
    )
    assert [(k, s) for k, s, _t in drawn] == [("base", "same"), ("background-on", "changed")]
    texts = {k: t for k, _s, t in drawn}
    facts = text_facts.TASK_ERA_FRAGMENTS
    assert len(texts["background-on"]) == facts["background-on"].length == 161
    whole = texts["base"] + texts["background-on"]
    assert len(whole) == text_facts.TASK_ERA_VARIANTS["A"].length == 828
    assert len(whole) != text_facts.VARIANTS["A"].length  # not the current era's text
    assert hashlib.sha256(whole.encode()).hexdigest() == text_facts.TASK_ERA_VARIANTS["A"].sha256
    nb.screenshot("inspector-6-task-era-live", element=root)
    root.locator(".lm-TabBar-tab", has_text="Eras & tools").click()
    cell = root.locator('.dsh-pane-eras tr[data-era="2026-07-15"] td[data-texts]')
    wait_until(lambda: cell.count() == 1, 20, message="the task era's row")
    assert cell.get_attribute("data-texts") == "live (0.0.1-rc.1)"
    tools = root.locator(".dsh-pane-eras tr[data-tool]").evaluate_all(
        "els => els.map(e => [e.dataset.tool, e.children[1].textContent])"
    )
    assert dict(tools)["task_output"] == "@deepseek-ai/dsh-tool-tasks"
