"""Fixtures for the harness tests: one live bridge per test session.

The live tests need ``node``.  Where node is absent they skip and say so;
where node is present, a bridge that cannot install or boot is a failure
(CI installs the packages first with ``python -m dsh_magics.harness.bridge
install``).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_magics.harness import Bridge, get_bridge

FIXTURES = Path(__file__).with_name("fixtures")
NO_NODE = shutil.which("node") is None or shutil.which("npm") is None
NO_NODE_REASON = "node/npm are not installed on this machine, so the live bridge cannot run"

requires_node = pytest.mark.skipif(NO_NODE, reason=NO_NODE_REASON)


@pytest.fixture(scope="session")
def bridge() -> Iterator[Bridge]:
    """The process-wide default bridge, started once for the whole session."""
    if NO_NODE:
        pytest.skip(NO_NODE_REASON)
    b = get_bridge()
    b.start()
    yield b
    b.close()


def block_registry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Point npm at a closed port with no retries and an empty cache: installs fail fast."""
    monkeypatch.setenv("npm_config_registry", "http://127.0.0.1:9/")
    monkeypatch.setenv("npm_config_fetch_retries", "0")
    monkeypatch.setenv("npm_config_cache", str(tmp_path / "npm-cache"))
    monkeypatch.setenv("npm_config_offline", "false")


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES
