"""The ipywidgets layer: changing a control widget re-renders the panes.

These run outside a kernel (ipywidgets uses a dummy comm), so they check the
Python side of the widget: control values flow into the view-model, the panes'
HTML follows, and controls that another control changes (a preset, the
simulator's standing mode) are synchronised without feedback loops.  The
browser test checks the same in a real frontend.
"""

from __future__ import annotations

import html
import re
import threading

import pytest

from dsh_magics.widgets.inspector import Inspector
from dsh_magics.widgets.inspector_backend import HarnessBackend
from dsh_magics.widgets.inspector_state import InspectorState

from ..conftest import wait_until


def _present_params(html: str) -> list[str]:
    return [
        name
        for name, status in re.findall(r'data-param="([^"]+)" data-status="([^"]+)"', html)
        if status != "removed"
    ]


@pytest.fixture
def insp() -> Inspector:
    i = Inspector(InspectorState(HarnessBackend(live=False), source="model"))
    assert i.widget is not None  # built
    return i


def test_background_checkbox_removes_run_in_background(insp: Inspector) -> None:
    assert "run_in_background" in _present_params(insp.panes["params"].value)
    insp.c_background.value = False
    html = insp.panes["params"].value
    assert "run_in_background" not in _present_params(html)
    assert 'data-param="run_in_background" data-status="removed"' in html
    assert insp.c_preset.value == "custom"
    assert insp.last_render_ms is not None


def test_sandbox_dropdown_adds_escalation_fields_and_selects_the_matching_preset(
    insp: Inspector,
) -> None:
    insp.c_sandbox.value = "read-only"
    present = _present_params(insp.panes["params"].value)
    assert present[-2:] == ["sandbox_permissions", "justification"]
    assert insp.c_preset.value == "package-default"
    assert insp.e_mode.value == "read-only"
    json_pane = html.unescape(insp.panes["json"].value)
    assert re.search(r'dsh-line-added">\+ +"sandbox_permissions": \{', json_pane)


def test_preset_sets_the_other_controls(insp: Inspector) -> None:
    insp.c_preset.value = "dsh-base"
    assert (insp.c_background.value, insp.c_sandbox.value) == (True, "workspace-write")
    insp.c_preset.value = "catalog-default"
    assert insp.c_sandbox.value == "none"
    assert "sandbox_permissions" not in _present_params(insp.panes["params"].value)


def test_era_disables_the_background_toggle_where_it_does_not_exist(insp: Inspector) -> None:
    insp.c_era.value = "2026-06-12"
    assert insp.c_background.disabled
    assert "bash_output" in insp.panes["eras"].value
    insp.c_era.value = "rfc-foreground-only"
    assert 'data-era-tools="1">bash<' in insp.panes["eras"].value
    insp.c_era.value = "2026-08-13"
    assert not insp.c_background.disabled


def test_escalation_controls_rerun_the_chain(insp: Inspector) -> None:
    pane = insp.panes["escalation"]
    assert 'data-category="granted"' in pane.value
    insp.e_mode.value = "danger-full-access"
    assert 'data-category="not-wider"' in pane.value
    assert pane.value.count('data-reachable="0"') == 2
    insp.e_mode.value = "read-only"
    insp.e_policy.value = "never"
    assert 'data-category="rejected"' in pane.value
    insp.e_policy.value = "ask"
    insp.e_approver.value = False
    assert 'data-category="no-approver"' in pane.value
    assert 'data-message-source="model"' in pane.value


def test_code_api_updates_the_widget_too(insp: Inspector) -> None:
    insp.set(sandbox="danger-full-access", background=False)
    assert insp.c_sandbox.value == "danger-full-access"
    assert insp.c_background.value is False
    insp.escalate(request=None)
    assert 'data-category="invalid-args"' in insp.panes["escalation"].value


def test_a_change_during_another_threads_refresh_is_not_swallowed(insp: Inspector) -> None:
    """While one thread's refresh writes the controls, a person's change on another
    thread still reaches the state: the "writing controls" flag is per thread."""
    in_window, release = threading.Event(), threading.Event()

    def hold(_change: object) -> None:
        if threading.current_thread().name == "refresher":
            in_window.set()
            release.wait(30)

    insp.c_era.observe(hold, names="value")
    refresher = threading.Thread(target=insp.set, kwargs={"era": "2026-07-15"}, name="refresher")
    refresher.start()
    person = threading.Thread(target=lambda: setattr(insp.c_background, "value", False))
    try:
        assert in_window.wait(30), "the refresh to reach the era control"
        person.start()
        wait_until(lambda: insp.state.controls.background is False, 10, msg="the change to land")
    finally:
        release.set()
        refresher.join(30)
        if person.ident is not None:
            person.join(30)
    assert insp.view.controls.era == "2026-07-15"
    assert insp.c_background.value is False and insp.view.controls.background is False
