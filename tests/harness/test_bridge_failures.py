"""Everything that stops the live bridge is one BridgeUnavailable; the model keeps working."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import psutil
import pytest

from dsh_magics.errors import BridgeUnavailable, InvalidArgument
from dsh_magics.harness import DEFAULT_VERSION, Bridge, Config, get_bridge, schema
from dsh_magics.harness.bridge import install_dir
from dsh_magics.harness.facts import TASK_ERA_VERSION, era_of_version

from ..conftest import wait_until
from .conftest import block_registry, requires_node


def test_missing_node_is_one_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    b = Bridge(cache_dir=tmp_path / "cache", progress=lambda _line: None)
    seen: list[str] = []
    b.on_status(lambda st: seen.append(st.state))
    with pytest.raises(BridgeUnavailable) as exc:
        b.start()
    assert exc.value.code == "BRIDGE_UNAVAILABLE"
    assert "node was not found" in exc.value.message
    assert b.status().state == "unavailable" and "node" in b.status().message
    assert seen == ["installing", "unavailable"]
    # the background path resolves instead of raising
    assert b.start_background().result(timeout=30).state == "unavailable"
    # the model is unaffected
    assert schema(Config(sandbox="read-only")).variant == "B"


@pytest.mark.node
@requires_node
@pytest.mark.parametrize("version", [DEFAULT_VERSION, TASK_ERA_VERSION])
def test_unreachable_registry_is_one_clear_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, version: str
) -> None:
    block_registry(monkeypatch, tmp_path)
    lines: list[str] = []
    b = Bridge(version, cache_dir=tmp_path / "cache" / "v", progress=lines.append)
    with pytest.raises(BridgeUnavailable) as exc:
        b.install()
    assert "registry is not reachable" in exc.value.message
    assert any("installing" in line for line in lines)  # progress was visible
    assert not (tmp_path / "cache" / "v").exists()  # no half-installed tree
    assert [p.name for p in (tmp_path / "cache").iterdir()] == []  # temp dir removed
    # the model still answers for the version's era
    assert schema(Config(era=era_of_version(version))).variant == "A"


def test_default_install_dir_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("DSH_MAGICS_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert install_dir("0.1.0-rc.8") == tmp_path / "dsh-magics" / "npm" / "0.1.0-rc.8"
    monkeypatch.setenv("DSH_MAGICS_CACHE_DIR", str(tmp_path / "x"))
    assert install_dir("v") == tmp_path / "x" / "npm" / "v"


@pytest.mark.node
@requires_node
def test_unpublished_version_is_refused() -> None:
    with pytest.raises(InvalidArgument, match="not published"):
        get_bridge("9.9.9-never")


@pytest.mark.node
@requires_node
def test_install_command_reports_progress(bridge: Bridge) -> None:
    """``python -m dsh_magics.harness.bridge install`` (the .ci/run line) on an
    installed cache: says so, boots, and exits 0."""
    import subprocess

    env = {**os.environ, "DSH_MAGICS_CACHE_DIR": str(bridge.prefix.parent.parent)}
    proc = subprocess.run(
        [sys.executable, "-m", "dsh_magics.harness.bridge", "install", "--version", bridge.version],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "already installed" in proc.stderr and "live bridge ready" in proc.stderr
    assert "Traceback" not in proc.stderr and "RuntimeWarning" not in proc.stderr


def test_a_tree_from_another_plan_is_not_installed(tmp_path: Path) -> None:
    """``installed.json`` must record this version's plan (specs and stand-ins) exactly,
    so a tree made by an older plan is reinstalled rather than booted."""
    import json

    b = Bridge(TASK_ERA_VERSION, cache_dir=tmp_path / "v", progress=lambda _line: None)
    pkg = b.prefix / "node_modules" / "@deepseek-ai" / "dsh-tool-bash"
    pkg.mkdir(parents=True)
    (pkg / "package.json").write_text(json.dumps({"version": TASK_ERA_VERSION}))
    record = {"version": TASK_ERA_VERSION, **b.plan.record()}
    (b.prefix / "installed.json").write_text(json.dumps(record))
    assert b.is_installed()
    (b.prefix / "installed.json").write_text(json.dumps({**record, "standins": []}))
    assert not b.is_installed()
    (b.prefix / "installed.json").write_text(
        json.dumps({**record, "packages": record["packages"][:-1]})
    )
    assert not b.is_installed()


@requires_node
def test_a_node_that_exits_before_it_is_ready_is_one_clear_error(
    bridge: Bridge, caplog: pytest.LogCaptureFixture
) -> None:
    """The boot reads the ready line; a process that exits first is unavailable, with its
    status. A status listener that raises is logged and the others still hear every change."""
    b = Bridge(bridge.version, cache_dir=bridge.prefix, node_options=("-e", "process.exit(3)"))
    seen: list[str] = []

    def broken(_status: object) -> None:
        raise RuntimeError("listener bug")

    b.on_status(broken)
    b.on_status(lambda st: seen.append(st.state))
    with pytest.raises(BridgeUnavailable, match=r"node bridge exited \(status 3\)"):
        b.start()
    assert b.status().state == "unavailable" and b.pid is None
    assert seen == ["booting", "unavailable"]
    logged = [r for r in caplog.records if r.getMessage() == "a live bridge status listener failed"]
    assert len(logged) == 2 and "listener bug" in str(logged[0].exc_info)


@requires_node
def test_a_killed_node_process_is_replaced_on_the_next_call(bridge: Bridge) -> None:
    """The bridge notices its process died and boots a new one for the next call."""
    b = Bridge(bridge.version, cache_dir=bridge.prefix)
    try:
        b.start()
        first = b.pid
        assert first is not None
        psutil.Process(first).kill()
        # Not the zombie state: node's leader shows Z while its other threads still exit.
        wait_until(lambda: b.pid is None, 30, msg="the bridge to see its node process gone")
        assert b.markers("read-only")["denial"]
        assert b.status().state == "ready"
        assert b.pid not in (None, first)
    finally:
        b.close()
    assert b.pid is None
