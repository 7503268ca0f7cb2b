"""The ``engine`` fixture: every contract test runs once per backend.

``local`` is an in-process :class:`Registry`, ``host`` a :class:`HostClient`
to a private terminal host in a short tmp dir. Each test gets the backend
with no terminal open and leaves none behind; the host is started once per
module and stopped (with its files) at the end. A new backend joins by
adding a fixture named ``<name>_engine`` and its name to :data:`BACKENDS`.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest

from dsh_magics.host import HostClient, HostPaths
from dsh_magics.terminal import Engine, Registry

from ..host.conftest import new_dir, stop_everything

BACKENDS = ["local", "host"]


@pytest.fixture(scope="module", autouse=True)
def _plain_shells() -> Iterator[None]:
    """Shells without the login profile, also in the host (it inherits our
    environment): the engine's own tests cover login shells."""
    old = os.environ.get("DSH_MAGICS_LOGIN")
    os.environ["DSH_MAGICS_LOGIN"] = "0"
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("DSH_MAGICS_LOGIN", None)
        else:
            os.environ["DSH_MAGICS_LOGIN"] = old


@pytest.fixture(scope="module")
def local_engine(_plain_shells: None) -> Iterator[Registry]:
    reg = Registry(login=False)
    try:
        yield reg
    finally:
        reg.close_all()


@pytest.fixture(scope="module")
def contract_host_dir() -> Iterator[str]:
    d = new_dir()
    try:
        yield d
    finally:
        stop_everything(d)
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def host_engine(_plain_shells: None, contract_host_dir: str) -> Iterator[HostClient]:
    client = HostClient(HostPaths.for_name("contract", contract_host_dir))
    client.connect()
    try:
        yield client
    finally:
        try:
            client.close_all()
        finally:
            client.detach()


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    """One backend of the engine contract, with no terminal open."""
    backend: Engine = request.getfixturevalue(f"{request.param}_engine")
    backend.close_all()
    try:
        yield backend
    finally:
        backend.close_all()
