"""In-process IPython fixtures for the magics tests.

One ``InteractiveShell`` per process (IPython's singleton), the extension
loaded once, and a session id unique to this test process so that the
process-wide registry other test modules may use is never disturbed.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.interactiveshell import InteractiveShell

from dsh_magics.notebook.magics import BashMagics
from dsh_magics.terminal import default_registry


def magics_of(ip: Any) -> BashMagics:
    return ip._dsh_magics_state.magics


@pytest.fixture(scope="module")
def ip() -> Iterator[Any]:
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "dsh_magics")
    session = f"magics-test-{os.getpid()}"
    shell.run_line_magic("config", f"BashMagics.default_session = {session!r}")
    shell.run_line_magic("config", "BashMagics.live_display = 'off'")
    yield shell
    reg = default_registry()
    for info in reg.list():
        if info.session_id.startswith(session):
            reg.close(info.session_id)


@pytest.fixture
def session(ip: Any) -> str:
    return magics_of(ip).session


@pytest.fixture
def live(ip: Any) -> Iterator[BashMagics]:
    """Live output areas on, as under a Jupyter kernel."""
    m = magics_of(ip)
    m.live_display = "on"
    try:
        yield m
    finally:
        m.live_display = "off"


@pytest.fixture(autouse=True)
def _idle_default_session(request: pytest.FixtureRequest) -> Iterator[None]:
    """Leave the default session idle after each test (a failed test must not
    make the next one fail with SESSION_BUSY)."""
    yield
    if "ip" not in request.fixturenames:
        return
    m = magics_of(request.getfixturevalue("ip"))
    reg = m.registry
    for info in reg.list():
        if info.session_id.startswith(m.session) and info.job_id:
            reg.interrupt(info.session_id)
            reg.job(info.job_id).wait(5)
