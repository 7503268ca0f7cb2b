from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from dsh_magics.terminal import Registry


@pytest.fixture(scope="module")
def reg() -> Iterator[Registry]:
    r = Registry(login=False)
    yield r
    r.close_all()


@pytest.fixture(scope="session")
def portable() -> ModuleType:
    from dsh_magics.terminal.core.proclayer import portable as impl

    return impl


@pytest.fixture(scope="session")
def procfs() -> ModuleType:
    """The /proc implementation, to check the portable one against."""
    from dsh_magics.terminal.core.proclayer import procfs as impl

    return impl
