"""The ``engine`` fixture: every contract test runs once per backend.

``local`` is an in-process :class:`Registry`, ``host`` a :class:`HostClient`
to a private terminal host in a short tmp dir, ``ssh`` a registry whose
terminals are ``ssh://`` ones to a real sshd on 127.0.0.1, ``podman`` one
whose terminals are ``podman://`` ones into a real container
(tests/containers.py). Each test gets the backend
with no terminal open and leaves none behind; the host is started once per
module and stopped (with its files) at the end. A new backend joins by
adding a fixture named ``<name>_engine`` and its name to :data:`BACKENDS`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator

import pytest

from dsh_magics.host import HostClient, HostPaths
from dsh_magics.terminal import Engine, Registry

from ..containers import Box
from ..host.conftest import _plain_shells, private_host_dir  # noqa: F401  (_plain_shells: an autouse fixture, here too)

BACKENDS = ["local", "host", "ssh", "podman"]
REMOTE_BACKENDS = {"ssh", "podman"}

# Contract tests that cannot hold for a remote shell, with why (docs/remote.md).
REMOTE_SKIPS = {
    "test_commands_run_in_a_shell_with_the_process_environment": "a remote shell does not inherit "
    "this process's environment",
    "test_nothing_a_command_reads_forges_its_end[ssh-scratch-files]": "a remote terminal has no "
    "scratch files to read",
    "test_nothing_a_command_reads_forges_its_end[podman-scratch-files]": "a remote terminal has no "
    "scratch files to read",
}
# Contract tests that cannot hold for a remote terminal, with why; strict
# xfails, so they flip (and must be unmarked) when they start to pass.
REMOTE_XFAILS: dict[str, str] = {}


def _without_run_id(name: str) -> str:
    """A test's name without tests/rerun.py's run id (``rerunN``), which it
    puts among the test's own ids: a skip by name holds for each run too."""
    return re.sub(r"\[rerun\d+\]$|(?<=\[)rerun\d+-|-rerun\d+(?=[\]-])", "", name)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("engine") if callspec is not None else None
        if backend not in REMOTE_BACKENDS:
            continue
        why = (
            REMOTE_SKIPS.get(item.originalname)
            or REMOTE_SKIPS.get(_without_run_id(item.name))
        )
        if why:
            item.add_marker(pytest.mark.skip(reason=f"{backend} backend: {why}"))
        elif item.originalname in REMOTE_XFAILS:
            item.add_marker(pytest.mark.xfail(strict=True, reason=f"{backend} backend: {REMOTE_XFAILS[item.originalname]}"))


@pytest.fixture(scope="module")
def local_engine() -> Iterator[Registry]:
    reg = Registry(login=False)
    try:
        yield reg
    finally:
        reg.close_all()


@pytest.fixture(scope="module")
def contract_host_dir() -> Iterator[str]:
    with private_host_dir() as d:
        yield d


@pytest.fixture(scope="module")
def host_engine(contract_host_dir: str) -> Iterator[HostClient]:
    client = HostClient(HostPaths.for_name("contract", contract_host_dir))
    client.connect()
    try:
        yield client
    finally:
        try:
            client.close_all()
        finally:
            client.detach()


@pytest.fixture(scope="module")
def ssh_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """Every terminal is an ``ssh://`` one, to a real sshd on 127.0.0.1."""
    from dsh_magics.terminal.remote.targets import ENV_SSH_OPTIONS

    from ..remote.conftest import start_sshd

    server = start_sshd(tmp_path_factory.mktemp("contract-sshd"))
    old = os.environ.get(ENV_SSH_OPTIONS)
    os.environ[ENV_SSH_OPTIONS] = server.client_config("contract")
    reg = Registry(login=False, target=server.target)
    try:
        yield reg
    finally:
        reg.close_all()
        if old is None:
            os.environ.pop(ENV_SSH_OPTIONS, None)
        else:
            os.environ[ENV_SSH_OPTIONS] = old
        server.stop()


@pytest.fixture(scope="module")
def podman_engine(podman_box: Box) -> Iterator[Registry]:
    """Every terminal is a ``podman://`` one, into the session's test container."""
    reg = Registry(login=False, target=podman_box.target)
    try:
        yield reg
    finally:
        reg.close_all()


@pytest.fixture(params=BACKENDS)
def engine(request: pytest.FixtureRequest) -> Iterator[Engine]:
    """One backend of the engine contract, with no terminal open."""
    backend: Engine = request.getfixturevalue(f"{request.param}_engine")
    backend.close_all()
    try:
        yield backend
    finally:
        backend.close_all()
