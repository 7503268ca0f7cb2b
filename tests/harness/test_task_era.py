"""The task era live from dsh-tool-bash 0.0.1-rc.1, booted with one stand-in.

The stand-in (docs/inspector.md, "The task era") supplies DSH_ENV_PREFIX and
parseExitStatus for the unpublished @deepseek-ai/dsh-bash.  These tests pin what
it may influence: a resolve hook swaps it for a probe with another prefix and a
parseExitStatus that records any call, and the schemas must differ exactly where
the prefix is interpolated and nowhere else.  Texts are checked by length and
SHA-256 only.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_magics.harness import Bridge, Config, diff, get_bridge, matrix, schema, text_facts
from dsh_magics.harness.bridge.install_plan import TASK_ERA_PLAN
from dsh_magics.harness.facts import TASK_ERA, TASK_ERA_VERSION
from dsh_magics.harness.live import text_fact

from .conftest import NO_NODE, NO_NODE_REASON, requires_node

pytestmark = [pytest.mark.node, requires_node]

COMBOS = [
    (bg, sb)
    for bg in (True, False)
    for sb in (None, "read-only", "workspace-write", "danger-full-access")
]
PREFIX_TOKEN = "`$DSH_*`"  # a name, as the base text interpolates it
PROBE_TOKEN = "`$PROBE_*`"


@pytest.fixture(scope="module")
def task_bridge() -> Iterator[Bridge]:
    if NO_NODE:
        pytest.skip(NO_NODE_REASON)
    b = get_bridge(TASK_ERA_VERSION)
    b.start()
    yield b
    b.close()


def _bash(bridge: Bridge, bg: bool, sb: str | None) -> dict:
    raw = bridge.schemas(Config(background=bg, sandbox=sb))  # type: ignore[arg-type]
    return next(t for t in raw["tools"] if t["name"] == "bash")


def test_installed_pinned_next_to_the_current_era(task_bridge: Bridge, bridge: Bridge) -> None:
    assert task_bridge.prefix.parent == bridge.prefix.parent
    assert task_bridge.prefix.name == TASK_ERA_VERSION != bridge.prefix.name
    hello = task_bridge.hello or {}
    assert hello["versions"]["@deepseek-ai/dsh-tool-bash"] == TASK_ERA_VERSION
    assert hello["versions"]["@deepseek-ai/dsh-shell"] == "0.0.1-rc.5"
    assert hello["seams"] == ["bash", "bashEnv"]  # the task era's executor seam
    manifest = json.loads((task_bridge.prefix / "package.json").read_text())
    for spec in TASK_ERA_PLAN.specs:
        name, version = spec.rsplit("@", 1)
        assert manifest["dependencies"][name] == version, spec  # pinned exactly


def test_standin_is_two_reexports_from_dsh_shell(task_bridge: Bridge) -> None:
    hello = task_bridge.hello or {}
    assert hello["standins"] == {
        "@deepseek-ai/dsh-bash": {
            "names": ["DSH_ENV_PREFIX", "parseExitStatus"],
            "from": "@deepseek-ai/dsh-shell@0.0.1-rc.5",
        }
    }
    d = task_bridge.prefix / "node_modules" / "@deepseek-ai" / "dsh-bash"
    assert (d / "index.js").read_text() == (
        'export { DSH_ENV_PREFIX, parseExitStatus } from "@deepseek-ai/dsh-shell"\n'
    )
    assert json.loads((d / "package.json").read_text())["version"].endswith("+dsh-magics-standin")


_IMPORT = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(?\s*)["']([^"'$]+)["']""")


def _package_of(spec: str) -> str | None:
    if spec.startswith((".", "/", "node:")):
        return None
    parts = spec.split("/")
    return "/".join(parts[:2]) if spec.startswith("@") else parts[0]


def test_unmet_peers_are_never_imported(task_bridge: Bridge) -> None:
    """Peers left unmet (not on the registry, or off the runtime path) are named
    in the plan, and no installed JavaScript imports any of them."""
    nm = task_bridge.prefix / "node_modules"
    pkgs = [p for p in nm.glob("@*/*")] + [p for p in nm.glob("[!@.]*")]
    present = {
        f"{p.parent.name}/{p.name}" if p.parent.name.startswith("@") else p.name for p in pkgs
    }
    unmet: set[str] = set()
    imported: set[str] = set()
    optional_all: set[str] = set()
    for p in pkgs:
        meta = json.loads((p / "package.json").read_text())
        optional = {n for n, m in meta.get("peerDependenciesMeta", {}).items() if m.get("optional")}
        unmet |= {n for n in meta.get("peerDependencies", {}) if n not in present | optional}
        optional_all |= optional
        for js in p.resolve().rglob("*.js"):
            if "node_modules" in js.relative_to(p.resolve()).parts:
                continue
            for spec in _IMPORT.findall(js.read_text(errors="replace")):
                pkg = _package_of(spec)
                if pkg is not None:
                    imported.add(pkg)
    assert unmet == set(TASK_ERA_PLAN.unmet_peers)
    assert not (imported & unmet), imported & unmet
    assert "@deepseek-ai/dsh-bash" in imported  # the scan does see the stand-in's importer
    # every other package import resolves (cordis guards its optional peers itself)
    assert {i for i in imported if i.startswith("@deepseek-ai/")} - optional_all <= present


@pytest.mark.parametrize(("bg", "sb"), COMBOS)
def test_live_texts_match_stored_facts(task_bridge: Bridge, bg: bool, sb: str | None) -> None:
    view = schema(Config(background=bg, sandbox=sb, era=TASK_ERA), "live")  # type: ignore[arg-type]
    assert view.source == "live" and view.version == TASK_ERA_VERSION
    fragments, variants, params = text_facts.BY_ERA[TASK_ERA]
    bash = view.bash
    assert not bash.description_is_summary
    assert bash.description_facts == variants[view.variant or "?"]
    assert [f.key for f in bash.fragments] == (
        ["base", "background-on" if bg else "background-off"] + (["escalation"] if sb else [])
    )
    for f in bash.fragments:
        assert f.text is not None and f.facts == fragments[f.key] == text_fact(f.text)
    for p in bash.params:
        assert p.text == params[p.name], p.name
    # the model agrees on structure and on every stored number
    model = schema(Config(background=bg, sandbox=sb, era=TASK_ERA))  # type: ignore[arg-type]
    assert model.bash.structure() == bash.structure()
    assert model.bash.description_facts == bash.description_facts
    assert diff(model, view).structurally_equal


def test_only_the_task_texts_differ_from_the_current_era(
    task_bridge: Bridge, bridge: Bridge
) -> None:
    cur_frag, cur_var, cur_params = text_facts.BY_ERA["2026-08-13"]
    task_frag, task_var, task_params = text_facts.BY_ERA[TASK_ERA]
    assert {k for k in cur_frag if cur_frag[k] != task_frag[k]} == {"background-on"}
    assert {k for k in cur_params if cur_params[k] != task_params[k]} == {"run_in_background"}
    assert (task_var["A"].length, cur_var["A"].length) == (828, 825)
    assert (task_var["B"].length, cur_var["B"].length) == (1839, 1836)


def test_tool_set_says_which_package_registers_the_task_tools(task_bridge: Bridge) -> None:
    view = schema(Config(era=TASK_ERA), "live")
    assert view.tool_names == ("bash", "task_kill", "task_list", "task_output")
    live = [t for t in view.tools if not t.description_is_summary]
    assert [t.name for t in live] == ["bash"]
    for t in view.tools[1:]:
        assert t.package == "@deepseek-ai/dsh-tool-tasks" and t.description_is_summary
    assert any("@deepseek-ai/dsh-tool-tasks, which is not on the registry" in n for n in view.notes)
    assert any("stand-in for the unpublished @deepseek-ai/dsh-bash" in n for n in view.notes)
    assert view.related == ()  # no tool-bash-persistent in this tree


def test_live_matrix_and_era_diff_on_live_texts(task_bridge: Bridge, bridge: Bridge) -> None:
    m = matrix("live", TASK_ERA)
    assert len(m.rows) == 8 and m.distinct == 4
    assert {r.chars for r in m.rows} == {1810, 3248, 1562, 3000}
    d = diff(schema(Config(era=TASK_ERA), "live"), schema(Config(), "live"))
    assert d.a_label.startswith("live:") and d.b_label.startswith("live:")
    assert d.fragments_changed == ("background-on",)
    assert d.texts_changed == ("run_in_background",)
    assert (d.chars_a, d.chars_b) == (1810, 1804)


# --------------------------------------------------------------- the probe
_REGISTER = """import { register } from 'node:module'
register('./hooks.mjs', import.meta.url)
"""
_HOOKS = """export async function resolve(specifier, context, next) {
  if (specifier === '@deepseek-ai/dsh-bash') {
    return { url: new URL('./probe.mjs', import.meta.url).href, shortCircuit: true }
  }
  return next(specifier, context)
}
"""
_PROBE = """import { writeFileSync } from 'node:fs'
export const DSH_ENV_PREFIX = 'PROBE_'
export function parseExitStatus(text) {
  writeFileSync(new URL('./called', import.meta.url), String(text))
  throw new Error('probe: parseExitStatus was called')
}
"""


@pytest.fixture(scope="module")
def probed(
    task_bridge: Bridge, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Bridge, Path]]:
    d = tmp_path_factory.mktemp("probe")
    (d / "register.mjs").write_text(_REGISTER)
    (d / "hooks.mjs").write_text(_HOOKS)
    (d / "probe.mjs").write_text(_PROBE)
    b = Bridge(
        TASK_ERA_VERSION,
        cache_dir=task_bridge.prefix,
        node_options=("--import", (d / "register.mjs").as_uri()),
        progress=lambda _line: None,
    )
    b.start()
    yield b, d
    b.close()


@pytest.mark.parametrize(("bg", "sb"), COMBOS)
def test_standin_names_reach_only_the_prefix_in_the_base_text(
    task_bridge: Bridge, probed: tuple[Bridge, Path], bg: bool, sb: str | None
) -> None:
    probe, d = probed
    real = _bash(task_bridge, bg, sb)
    swapped = _bash(probe, bg, sb)
    # parameters (names, types, enums, every parameter description) do not depend on them
    assert swapped["parameters"] == real["parameters"]
    # the description does, at exactly one place: the interpolated prefix
    assert real["description"].count(PREFIX_TOKEN) == 1
    assert swapped["description"] != real["description"]
    assert swapped["description"] == real["description"].replace(PREFIX_TOKEN, PROBE_TOKEN)
    base = text_facts.TASK_ERA_FRAGMENTS["base"]
    assert real["description"].index(PREFIX_TOKEN) + len(PREFIX_TOKEN) <= base.length
    assert not (d / "called").exists()  # building schemas never calls parseExitStatus


def test_prefix_value_has_two_published_witnesses(task_bridge: Bridge) -> None:
    """The stood-in prefix is what the rc.1 line shipped: dsh-subprocess 0.0.1-rc.1
    exports that value, and dsh-tool-bash 0.0.1-rc.1's own README names the same
    variables the description points to."""
    out = subprocess.run(
        [
            "node",
            "--input-type=module",
            "-e",
            "import { DSH_ENV_PREFIX } from '@deepseek-ai/dsh-subprocess';"
            "import { DSH_ENV_PREFIX as p } from '@deepseek-ai/dsh-bash';"
            "console.log(JSON.stringify([DSH_ENV_PREFIX, p]))",
        ],
        cwd=task_bridge.prefix,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert json.loads(out) == ["DSH_", "DSH_"]
    readme = task_bridge.prefix / "node_modules" / "@deepseek-ai" / "dsh-tool-bash" / "README.md"
    assert "`$DSH_*`" in readme.read_text()
