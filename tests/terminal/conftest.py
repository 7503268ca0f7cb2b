from __future__ import annotations

import pytest

from dsh_magics.terminal import Registry


@pytest.fixture(scope="module")
def reg():
    r = Registry(login=False)
    yield r
    r.close_all()


@pytest.fixture
def fresh_reg():
    r = Registry(login=False)
    yield r
    r.close_all()


def run(reg: Registry, cmd: str, session: str = "t", timeout_ms: int = 20_000):
    res = reg.exec(session, cmd, wait_ms=timeout_ms)
    assert hasattr(res, "exit_code"), f"job did not finish within {timeout_ms} ms: {cmd!r}"
    return res
