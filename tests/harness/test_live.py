"""The live bridge: the real published packages agree with the model.

Only lengths and SHA-256 digests of harness texts appear here.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json

import psutil
import pytest

from dsh_magics.harness import (
    SANDBOX_MODES,
    Bridge,
    Config,
    PluginLoadError,
    matrix,
    schema,
    text_facts,
    tool_size,
)
from dsh_magics.harness import markers as harness_markers
from dsh_magics.harness.live import classify_message, text_fact

from .conftest import requires_node

pytestmark = [pytest.mark.node, requires_node]

# From the reference (booted @deepseek-ai/dsh-tool-bash@0.1.0-rc.8):
# variant -> (description length, sha256(description), sha256(JSON.stringify(parameters, null, 2)))
REFERENCE = {
    "A": (
        825,
        "f7b37227848f34ad5e576d931077ffe2a52ccc3af6b0a899f17a346f136cf3c3",
        "8c9c747dcdd54c52e627085c7a7a53714dcb8b76cb5931bb8f2489e271166eda",
    ),
    "B": (
        1836,
        "c64b97e8864d53f743ca7f78da79bf858fec1dda3b71d2ca7e35ddd970a27816",
        "50156d249d0cb050327a920136715c1060cda4c43f32dffccf3d4086cf591121",
    ),
    "C": (
        759,
        "6398d93f6f7afb435162cb7e049870e74c1be773ca62e21650cadd4ceac126b4",
        "774c8d780c94d2ee4ed5be086165f782ed0624aed970e13552f99449d1a81c93",
    ),
    "D": (
        1770,
        "d6539ca13476cccbf16768fe19146d3085838957246f973b96584558ae5c5282",
        "89b630d953d138ed5791a2ff80d6ee2941db9c822ff7c692808a7e23fad3cdef",
    ),
}
ALL_COMBOS = [(bg, mode) for bg in (True, False) for mode in SANDBOX_MODES]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.mark.parametrize("bg,mode", ALL_COMBOS)
def test_model_equals_live_in_structure(bridge: Bridge, bg: bool, mode: str | None) -> None:
    cfg = Config(background=bg, sandbox=mode)  # type: ignore[arg-type]
    live, model = schema(cfg, "live"), schema(cfg, "model")
    assert live.tool_names == model.tool_names
    assert live.variant == model.variant
    for lt, mt in zip(live.tools, model.tools, strict=True):
        assert [p.structure() for p in lt.params] == [p.structure() for p in mt.params]
        # exact JSON shape, key order included (descriptions blanked)
        assert json.dumps(lt.structure()) == json.dumps(mt.structure())
    assert [f.key for f in live.bash.fragments] == [f.key for f in model.bash.fragments]
    live_related = {t.name: t for t in live.related}
    model_related = {t.name: t for t in model.related}
    assert json.dumps(live_related["bash"].structure()) == json.dumps(
        model_related["bash"].structure()
    )
    # sizes: the model's stored facts reproduce the live numbers exactly
    for lt, mt in zip(live.tools, model.tools, strict=True):
        assert tool_size(lt) == tool_size(mt)


@pytest.mark.parametrize("bg,mode", ALL_COMBOS)
def test_live_texts_match_the_reference_hashes(bridge: Bridge, bg: bool, mode: str | None) -> None:
    view = schema(Config(background=bg, sandbox=mode), "live")  # type: ignore[arg-type]
    length, desc_sha, params_sha = REFERENCE[view.variant or "?"]
    assert len(view.bash.description) == length
    assert sha(view.bash.description) == desc_sha
    assert sha(json.dumps(view.bash.parameters, indent=2, ensure_ascii=False)) == params_sha
    assert view.bash.description_facts == text_facts.VARIANTS[view.variant or "?"]
    # fragments were cut from the real texts and are the ones we know
    assert "".join(f.text or "" for f in view.bash.fragments) == view.bash.description
    for f in view.bash.fragments:
        assert f.facts == text_facts.FRAGMENTS[f.key]


def test_stored_text_facts_match_live(bridge: Bridge) -> None:
    view = schema(Config(sandbox="read-only"), "live")
    for p in view.bash.params:
        assert p.text == text_facts.BASH_PARAMS[p.name], p.name
    for t in [*view.tools[1:], *view.related]:
        facts = text_facts.TOOLS[f"{t.package.split('/')[-1]}:{t.name}"]
        assert t.description_facts == facts["description"]
        assert {p.name: p.text for p in t.params} == facts["params"]


def test_load_error_matches(bridge: Bridge) -> None:
    with pytest.raises(PluginLoadError) as exc:
        schema(Config(sandbox="read-only", sandbox_policy=False), "live")
    raw = bridge.schemas(Config(sandbox="read-only", sandbox_policy=False))
    assert text_fact(raw["load_error"]) == text_facts.LOAD_ERROR
    assert raw["load_error"] in exc.value.message


def test_live_matrix_has_four_schemas(bridge: Bridge) -> None:
    live, model = matrix("live"), matrix("model")
    assert live.distinct == 4 and len(live.rows) == 8
    assert [(r.params, r.schema_id, r.chars, r.tokens) for r in live.rows] == [
        (r.params, r.schema_id, r.chars, r.tokens) for r in model.rows
    ]


@pytest.mark.parametrize("mode", ["read-only", "workspace-write", "danger-full-access"])
def test_markers(bridge: Bridge, mode: str) -> None:
    live = harness_markers(mode, source="live")
    assert text_fact(live.denial) == text_facts.DENIAL_MARKERS[mode]
    assert live.hint is not None and text_fact(live.hint) == text_facts.HINT_MARKER
    assert not live.is_summary
    assert harness_markers(mode, source="live", escalation_advertised=False).hint is None
    model = harness_markers(mode)
    assert model.is_summary and mode in model.denial and model.hint is not None


def test_results_are_cached_per_config(bridge: Bridge) -> None:
    first = bridge.schemas(Config(background=False))
    assert bridge.schemas(Config(background=False)) is first
    assert bridge.schemas(Config(background=True)) is not first


def test_unknown_message_is_not_classified() -> None:
    assert classify_message("something else entirely") is None


def test_live_era_without_a_published_package_is_refused(bridge: Bridge) -> None:
    from dsh_magics.errors import InvalidArgument

    with pytest.raises(InvalidArgument, match="model-only"):
        schema(Config(era="2026-07-11"), "live")
    with pytest.raises(InvalidArgument, match="does not carry era"):
        schema(Config(era="2026-07-15"), "live", version=bridge.version)


def test_background_boot_reports_status_and_leaves_no_process(bridge: Bridge) -> None:
    """A second bridge on the same installed cache boots off-thread and closes cleanly."""
    b = Bridge(bridge.version, cache_dir=bridge.prefix)
    seen: list[str] = []
    b.on_status(lambda st: seen.append(st.state))
    status = b.start_background().result(timeout=60)
    assert status.state == "ready" and status.installed
    assert seen == ["booting", "ready"]
    pid = b.pid
    assert pid is not None and psutil.pid_exists(pid)
    assert b.schemas(Config())["tools"][0]["name"] == "bash"
    b.close()
    assert b.status().state == "idle"
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_live_view_serialises(bridge: Bridge) -> None:
    view = schema(Config(), "live")
    data = json.loads(json.dumps(view.to_dict(), ensure_ascii=False))
    assert data["source"] == "live" and data["version"] == bridge.version
    assert dataclasses.asdict(view.config) == data["config"]
