"""The inspector over the live bridge (the real published packages in Node).

Checks that live and the model agree on everything structural the inspector
shows, that live adds the exact texts (checked by length and SHA-256 only; no
harness prose is stored here), that escalation categories agree while only
live carries the harness's own message, and that booting never blocks: the
model answers, with a loading badge, until the bridge is ready.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh_magics.harness import CURRENT_ERA, DEFAULT_VERSION, Bridge
from dsh_magics.harness.live import text_fact
from dsh_magics.widgets.inspector import Inspector, inspect
from dsh_magics.widgets.inspector_backend import HarnessBackend
from dsh_magics.widgets.inspector_html import section_html
from dsh_magics.widgets.inspector_state import InspectorState
from tests.conftest import wait_until

from ..harness.conftest import block_registry

pytestmark = [
    pytest.mark.node,
    pytest.mark.skipif(
        shutil.which("node") is None, reason="node is not installed: the live bridge needs Node.js"
    ),
]

COMBOS = [
    (bg, sb)
    for bg in (True, False)
    for sb in (None, "read-only", "workspace-write", "danger-full-access")
]


@pytest.fixture(scope="module")
def live() -> InspectorState:
    backend = HarnessBackend()
    fut = backend.start_live()
    status = fut.result(600)
    assert status.state == "ready", (
        f"live bridge unavailable although node exists: {status.message}"
    )
    state = InspectorState(backend, source="live")
    state.set_live_status(backend.live_status())
    return state


@pytest.fixture(scope="module")
def model() -> InspectorState:
    return InspectorState(HarnessBackend(live=False), source="model")


@pytest.mark.parametrize(("bg", "sb"), COMBOS)
def test_live_and_model_views_agree_structurally(
    live: InspectorState, model: InspectorState, bg: bool, sb: str | None
) -> None:
    lv = live.update(background=bg, sandbox=sb)
    mv = model.update(background=bg, sandbox=sb)
    assert (
        lv.badge.source == "live" and "LIVE" in lv.badge.text and DEFAULT_VERSION in lv.badge.text
    )
    assert [(r.name, r.type, r.enum, r.required, r.status) for r in lv.params.rows] == [
        (r.name, r.type, r.enum, r.required, r.status) for r in mv.params.rows
    ]
    assert lv.variant == mv.variant
    ld, md = lv.description, mv.description
    assert (ld.chars, ld.tokens, ld.delta_chars, ld.delta_tokens) == (
        md.chars, md.tokens, md.delta_chars, md.delta_tokens,
    )  # fmt: skip
    assert (ld.tool_chars, ld.tool_tokens, ld.tool_delta_chars) == (
        md.tool_chars, md.tool_tokens, md.tool_delta_chars,
    )  # fmt: skip
    assert [[r.cells, r.current] for r in lv.matrix.rows] == [
        [r.cells, r.current] for r in mv.matrix.rows
    ]
    assert lv.eras.tool_names == mv.eras.tool_names


def test_live_description_is_exact_and_made_of_its_fragments(live: InspectorState) -> None:
    v = live.update(background=True, sandbox="read-only")
    d = v.description
    assert d.exact
    texts = [f.text for f in d.fragments if f.status != "removed"]
    assert all(t for t in texts)
    whole = "".join(texts)  # type: ignore[arg-type]
    assert len(whole) == d.chars
    model_facts = live.backend.schema(v.controls.config(), "model").bash.description_facts
    assert model_facts is not None
    assert hashlib.sha256(whole.encode()).hexdigest() == model_facts.sha256
    assert not v.json.descriptions_are_summaries
    # The rendered pane marks each fragment of the exact text; the added one is signed.
    html = section_html(v, "description")
    assert 'data-exact="1"' in html
    marks = re.findall(
        r'<mark class="dsh-frag [^"]+" data-fragment="([^"]+)" data-status="([^"]+)"', html
    )
    assert marks == [("base", "same"), ("background-on", "same"), ("escalation", "added")]


@pytest.mark.parametrize(
    "inputs",
    [
        dict(mode="read-only", request="workspace-write"),
        dict(mode="danger-full-access", request="workspace-write"),
        dict(mode="workspace-write", request="danger-full-access", policy="never"),
        dict(mode="read-only", request="danger-full-access", approver=False),
        dict(mode="read-only", request="danger-full-access", agent=False),
        dict(mode="read-only", request="workspace-write", outcome="cancelled"),
        dict(mode="read-only", request=None),
        dict(mode="read-only", request="workspace-write", justification="  "),
        dict(mode="read-only", request=None, justification=""),
    ],
)
def test_escalation_categories_agree_and_only_live_has_the_exact_message(
    live: InspectorState, model: InspectorState, inputs: dict
) -> None:
    base = dict(
        outcome="allowed-once", approver=True, agent=True, policy="ask", justification="ours"
    )
    lx = live.update_escalation(**{**base, **inputs}).escalation
    mx = model.update_escalation(**{**base, **inputs}).escalation
    assert lx.source == "live" and mx.source == "model"
    assert lx.category == mx.category
    assert [s.passed for s in lx.steps] == [s.passed for s in mx.steps]
    if mx.message is not None:
        assert mx.message_is_summary and mx.message.startswith("[summary]")
    if not lx.granted and lx.category != "not-requested":
        assert lx.message and not lx.message_is_summary and not lx.message.startswith("[summary]")


def _catalog_from(tools: list[dict[str, Any]], path: Path) -> None:
    """Write tools into the catalog layout at run time (texts are never stored)."""
    out = ["# Tool Schema Catalog", ""]
    by_pkg: dict[str, list[dict[str, Any]]] = {}
    for t in tools:
        by_pkg.setdefault(t["package"], []).append(t)
    for pkg, items in by_pkg.items():
        out += [f"## `{pkg}`", ""]
        for t in items:
            out += [f"### `{t['name']}`", ""]
            if t["description"]:
                out += [t["description"], ""]
            out += ["```json", json.dumps(t["parameters"], indent=2, ensure_ascii=False), "```", ""]
            out += ["Source: [`src/index.ts`](../src/index.ts)", ""]
    path.write_text("\n".join(out))


def test_a_catalog_made_from_live_has_no_drift_against_live(
    live: InspectorState, tmp_path: Path
) -> None:
    view = live.backend.schema(live.update(background=True, sandbox=None).controls.config(), "live")
    tools = [{"package": t.package, **t.model_json()} for t in view.tools]
    path = tmp_path / "tool-catalog.md"
    _catalog_from(tools, path)
    insp = inspect(source="live", catalog=path)
    insp.wait_for_live(120)
    for key in ("@deepseek-ai/dsh-tool-bash::bash", "@deepseek-ai/dsh-tool-jobs::job_output"):
        insp.select_tool(key)
        drift = insp.view.catalog.selected.drift
        assert drift is not None and drift.source == "live"
        assert drift.ok, drift.findings


class GatedBridge(Bridge):
    """A real bridge whose boot waits for a gate: the boot is "slow" for as long as we like."""

    def __init__(self, gate: threading.Event) -> None:
        super().__init__(DEFAULT_VERSION)
        self.gate = gate

    def start(self) -> None:
        if not self.gate.wait(60):
            raise AssertionError("gate never opened")
        super().start()


@pytest.fixture
def gated() -> Iterator[tuple[threading.Event, GatedBridge]]:
    gate = threading.Event()
    bridge = GatedBridge(gate)
    try:
        yield gate, bridge
    finally:
        gate.set()
        bridge.close()


def test_booting_never_blocks_and_the_widget_switches_to_live_when_ready(
    gated: tuple[threading.Event, GatedBridge],
) -> None:
    gate, bridge = gated
    insp = Inspector(InspectorState(HarnessBackend(bridge=bridge), source="live"))
    assert insp.widget is not None
    v = insp.view
    assert v.badge.source == "model" and v.badge.requested == "live" and v.badge.loading
    assert 'data-loading="1"' in insp.badge.value
    # The controls work (with the model) while the bridge is still booting.
    insp.c_background.value = False
    assert 'data-param="run_in_background" data-status="removed"' in insp.panes["params"].value
    assert bridge.pid is None
    gate.set()
    wait_until(lambda: insp.view.badge.source == "live", 60, msg="the inspector to switch to live")
    # The widget was refreshed from the bridge's worker thread.
    wait_until(lambda: 'data-source="live"' in insp.badge.value, 10, msg="the badge widget to say live")
    assert insp.view.description.exact
    assert insp.view.controls.background is False  # the user's choice survived the switch
    assert bridge.pid is not None



def test_a_bridge_ready_before_the_widget_subscribes_is_not_missed(
    gated: tuple[threading.Event, GatedBridge],
) -> None:
    """The widget subscribes after the state's first look; a bridge that became ready
    in between is read once more, so the inspector still switches to live."""
    gate, bridge = gated
    state = InspectorState(HarnessBackend(bridge=bridge), source="live")
    assert state.view().badge.source == "model"  # the first look: the bridge is idle
    gate.set()
    assert bridge.start_background().result(60).state == "ready"
    insp = Inspector(state)
    assert insp.view.badge.source == "live"

# ------------------------------------------------------------------ the task era
TASK_ERA = "2026-07-15"


def test_task_era_is_live_from_its_own_package(live: InspectorState) -> None:
    from dsh_magics.harness import text_facts

    try:
        v = live.update(era=TASK_ERA, background=True, sandbox=None, baseline="current-era")
        assert v.badge.source == "live" and "@0.0.1-rc.1" in v.badge.text
        assert v.description.exact
        frags = {f.key: f for f in v.description.fragments}
        facts = text_facts.BY_ERA[TASK_ERA][0]
        assert frags["background-on"].text is not None
        assert text_fact(frags["background-on"].text) == facts["background-on"]
        assert frags["background-on"].chars == 161 and frags["background-on"].status == "changed"
        assert frags["base"].status == "same"  # same text in both live eras
        assert v.description.chars == text_facts.TASK_ERA_VARIANTS["A"].length == 828
        rows = {r.name: r for r in v.params.rows}
        assert rows["run_in_background"].status == "changed"
        assert rows["run_in_background"].changes == ("description text differs (compared exactly)",)
        assert rows["command"].status == "same"
        eras = section_html(v, "eras")
        assert 'data-texts="live (0.0.1-rc.1)"' in eras
        assert 'data-texts="live (0.1.0-rc.8)"' in eras
        assert eras.count('data-texts="modelled"') == 3
        tools = {t.name: t.package for t in v.eras.tools}
        assert tools["task_output"] == "@deepseek-ai/dsh-tool-tasks"
        assert any("dsh-tool-tasks, which is not on the registry" in n for n in v.notes)
        m = v.matrix
        assert m.era == TASK_ERA and m.source == "live" and m.distinct == 4
    finally:
        live.update(era=CURRENT_ERA, baseline="catalog-default")


def test_task_era_install_failure_is_one_line_and_falls_back_to_the_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    block_registry(monkeypatch, tmp_path)
    failing = Bridge("0.0.1-rc.1", cache_dir=tmp_path / "v", progress=lambda _line: None)
    backend = HarnessBackend(era_bridges={TASK_ERA: failing})
    assert backend.start_live().result(600).state == "ready"  # the current era is unaffected
    state = InspectorState(backend, source="live")
    state.set_live_status(backend.live_status())
    v = state.update(era=TASK_ERA)
    assert v.badge.source == "model" and v.badge.state == "unavailable"
    assert v.badge.detail == "live unavailable: the npm registry is not reachable (npm exit 1)"
    assert "\n" not in v.badge.detail
    assert v.description.chars == 828  # the model still knows the size, from the stored facts
    assert state.update(era=CURRENT_ERA).badge.source == "live"
