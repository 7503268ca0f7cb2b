"""A request is checked once at each edge: ``command`` goes through
``validation.command`` once per call in each process it crosses (the tool call, the
Engine keyword, the host client and, in the host, the protocol row), counted with a
profiler hook on the real function: nothing is patched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections.abc import Iterator

import pytest

from dsh_magics import tools
from dsh_magics.host import HostClient, HostPaths
from dsh_magics.host.server import HostServer
from dsh_magics.terminal import Registry, Result
from dsh_magics.terminal import validation as V
from tests.conftest import calls_of


@pytest.fixture(scope="module")
def registry() -> Iterator[Registry]:
    reg = Registry(login=False)
    try:
        yield reg
    finally:
        reg.close_all()


def test_a_tool_call_checks_its_command_once(registry: Registry, prefix: str) -> None:
    with calls_of(V.command) as seen:
        out = tools.call("bash_exec", {"command": "echo once", "wait_ms": 20_000}, caller_session=prefix + "t", registry=registry)
    assert out.get("output") == "once\n", out
    assert len(seen) == 1, seen


def test_an_engine_call_checks_its_command_once(registry: Registry, prefix: str) -> None:
    with calls_of(V.command) as seen:
        res = registry.exec(prefix + "e", "echo once", wait_ms=20_000)
    assert isinstance(res, Result) and res.output == "once\n"
    assert len(seen) == 1, seen


def test_a_group_call_checks_its_command_once_for_every_member(registry: Registry, prefix: str) -> None:
    """fanout/ builds the members' request once: three targets, one check (it was one per
    member, and the tool's own, before)."""
    targets = [f"{prefix}g[1-3]"]
    with calls_of(V.command) as seen:
        started = tools.call("bash_exec", {"command": "echo once", "targets": targets}, caller_session=prefix + "t",
                             registry=registry)  # fmt: skip
        done = tools.call("bash_wait", {"job_id": started["group_id"], "timeout_ms": 60_000},
                          caller_session=prefix + "t", registry=registry)  # fmt: skip
    assert done["counts"] == {"completed": 3}, done
    assert len(seen) == 1, seen
    bad = tools.call("bash_exec", {"command": " ", "targets": targets}, caller_session=prefix + "t", registry=registry)
    assert bad["error"]["field"] == "command" and bad["error"]["message"].startswith("command: "), bad
    for i in (1, 2, 3):
        registry.close(f"{prefix}g{i}")


def test_a_bad_command_is_refused_by_that_one_check(registry: Registry, prefix: str) -> None:
    with calls_of(V.command) as seen:
        out = tools.call("bash_exec", {"command": "  "}, caller_session=prefix + "t", registry=registry)
    assert out["error"]["field"] == "command" and len(seen) == 1, (out, seen)


def test_through_the_host_the_client_and_the_host_check_it_once_each(prefix: str) -> None:
    """The host client's edge checks it (a bad command costs no round trip), and the
    host's protocol row, its own edge, once more; the registry behind it does not."""
    directory = tempfile.mkdtemp(prefix="dshq-", dir="/tmp")
    os.chmod(directory, 0o700)
    paths = HostPaths.for_name("once", directory)
    server = HostServer(paths, registry=Registry(login=False))
    server.bind()
    serving = threading.Thread(target=server.serve_forever, name="host-serve", daemon=True)
    client = HostClient(paths, autostart=False)
    try:
        with calls_of(V.command) as seen:
            serving.start()
            res = client.exec(prefix + "h", "echo once", wait_ms=20_000)
        assert isinstance(res, Result) and res.output == "once\n"
        main = threading.current_thread().name
        assert seen.count(main) == 1, seen  # the client's edge
        assert len(seen) == 2, seen  # and the host's
    finally:
        client.close_all()
        client.detach()
        server.stop("test over")
        serving.join(20)
        shutil.rmtree(directory, ignore_errors=True)
    assert not serving.is_alive()
