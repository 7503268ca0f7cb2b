"""Choosing where terminals live: in-process unless a Jupyter server
started this kernel for a notebook; DSH_MAGICS_HOST and the config key
force either way (the variable wins)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from dsh_magics import host
from dsh_magics.errors import HostUnavailable, InvalidArgument
from dsh_magics.host import HostClient, choose_mode, jupyter_server_pid
from dsh_magics.terminal import Registry, default_registry

SERVER = str(os.getppid())  # some live process that is not us
NOTEBOOK = {"JPY_PARENT_PID": SERVER, "JPY_SESSION_NAME": "/work/nb.ipynb"}


def test_plain_process_is_in_process() -> None:
    c = choose_mode(None, {})
    assert not c.use_host and not c.forced


def test_notebook_kernel_under_a_server_uses_its_host() -> None:
    c = choose_mode("auto", NOTEBOOK)
    assert c.use_host and not c.forced
    assert c.name == f"jupyter-{SERVER}" and c.watch_pid == int(SERVER)


def test_a_launcher_without_a_notebook_is_not_a_server() -> None:
    # jupyter_client sets JPY_PARENT_PID for any kernel (test harnesses, nbclient).
    assert not choose_mode(None, {"JPY_PARENT_PID": SERVER}).use_host
    assert jupyter_server_pid({"JPY_PARENT_PID": SERVER}) is None


def test_dead_or_bogus_parent_is_ignored() -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    for pid in (str(gone.pid), "0", "1", "abc", "", str(os.getpid())):
        assert jupyter_server_pid({"JPY_PARENT_PID": pid, "JPY_SESSION_NAME": "x"}) is None


@pytest.mark.parametrize(
    ("env", "config", "use_host"),
    [
        ({"DSH_MAGICS_HOST": "0", **NOTEBOOK}, None, False),
        ({"DSH_MAGICS_HOST": "off", **NOTEBOOK}, "on", False),
        ({"DSH_MAGICS_HOST": "1"}, None, True),
        ({"DSH_MAGICS_HOST": "1"}, "off", True),
        ({"DSH_MAGICS_HOST": "auto"}, "on", True),
        ({}, True, True),
        (NOTEBOOK, "off", False),
        (NOTEBOOK, False, False),
    ],
)
def test_forcing(env: dict, config: object, use_host: bool) -> None:
    c = choose_mode(config, env)
    assert c.use_host is use_host and c.forced


def test_forced_without_a_server_uses_the_default_host() -> None:
    c = choose_mode("on", {})
    assert c.name == "default" and c.watch_pid is None


def test_forced_under_a_launcher_follows_it() -> None:
    c = choose_mode("on", {"JPY_PARENT_PID": SERVER})
    assert c.name == f"jupyter-{SERVER}" and c.watch_pid == int(SERVER)


@pytest.mark.parametrize("bad", ["maybe", "2"])
def test_bad_values_are_refused(bad: str) -> None:
    with pytest.raises(InvalidArgument, match="DSH_MAGICS_HOST"):
        choose_mode(None, {"DSH_MAGICS_HOST": bad})
    with pytest.raises(InvalidArgument, match="config"):
        choose_mode(bad, {})


def test_select_registry_in_process_returns_the_engine_registry() -> None:
    reg = host.select_registry("off", environ={})
    assert isinstance(reg, Registry) and reg is default_registry()
    assert host.current_mode().reason.startswith("in-process")
    assert host.detach_on_shutdown() is False


_SELECT = r"""
import os, sys
from dsh_magics import host
from dsh_magics.terminal import default_registry, set_default_registry
reg = host.select_registry(None)
print(type(reg).__name__, default_registry() is reg, host.current_mode().name, flush=True)
r = reg.exec("mode-sel", "echo via-$0", wait_ms=10000)
print(r.output.strip(), flush=True)
print(host.detach_on_shutdown(), flush=True)
"""


def test_select_registry_installs_the_client_as_default(host_dir: str) -> None:
    env = dict(os.environ, DSH_MAGICS_HOST="1", DSH_MAGICS_HOST_DIR=host_dir)
    env.pop("JPY_PARENT_PID", None)
    out = subprocess.run([sys.executable, "-c", _SELECT], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == "HostClient True default"
    assert lines[1].startswith("via-")
    assert lines[2] == "True"
    # The process exited after detaching: its terminal lives on in the host.
    c = HostClient(host.HostPaths.for_name("default", host_dir), autostart=False)
    assert c.exists("mode-sel")
    c.detach()


def test_forced_mode_raises_when_no_host_can_start(tmp_path) -> None:
    bad = tmp_path / "open"
    bad.mkdir()
    os.chmod(bad, 0o755)
    env = {"DSH_MAGICS_HOST": "1", "DSH_MAGICS_HOST_DIR": str(bad)}
    with pytest.raises(HostUnavailable, match="0700"):
        host.select_registry(None, environ=env)
    # Automatic mode falls back to the in-process engine instead.
    reg = host.select_registry(None, environ={**NOTEBOOK, "DSH_MAGICS_HOST_DIR": str(bad)})
    assert isinstance(reg, Registry)
    assert "host unavailable" in host.current_mode().reason
