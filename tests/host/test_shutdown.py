"""Process exit has one owner (dsh_magics.shutdown): its steps run in their
declared order whatever the registration order, on a normal exit and on
SIGTERM; host clients detach before in-process terminals close, so a
process's exit never closes the host's terminals."""

from __future__ import annotations

import signal
import subprocess
import sys

from dsh_magics.host import HostClient, HostPaths

from .conftest import pids_with_env, wait_until

_ORDER = r"""
from dsh_magics import shutdown
for step, name in [(shutdown.BRIDGES, "bridges"), (shutdown.TERMINALS, "terminals"),
                   (shutdown.DETACH, "detach"), (shutdown.VIEWS, "views")]:
    shutdown.register(step, lambda name=name: print(name, flush=True))
off = shutdown.register(shutdown.VIEWS, lambda: print("unregistered", flush=True))
off()
shutdown.register(shutdown.VIEWS, lambda: 1 / 0)  # a failing step does not stop the rest
print("exiting", flush=True)
"""


def test_steps_run_in_their_order_at_exit() -> None:
    out = subprocess.run([sys.executable, "-c", _ORDER], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["exiting", "views", "detach", "terminals", "bridges"]
    assert "ZeroDivisionError" in out.stderr


_SIGTERM = r"""
import os, signal, sys
from dsh_magics import shutdown
from dsh_magics.terminal import default_registry
reg = default_registry()
shutdown.register(shutdown.VIEWS, lambda: print("views", flush=True))
reg.exec("shutdown-term", "sleep 300 &", wait_ms=10_000)
print("ready", flush=True)
sys.stdin.readline()
"""


def test_sigterm_runs_the_steps_and_still_ends_the_process() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", _SIGTERM], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        assert pids_with_env("DSH_MAGICS_SESSION", "shutdown-term")
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert out.split() == ["views"]
    assert proc.returncode == -signal.SIGTERM
    wait_until(lambda: not pids_with_env("DSH_MAGICS_SESSION", "shutdown-term"), timeout=10)


_CLIENT = r"""
import sys
from dsh_magics.host import HostClient, HostPaths
from dsh_magics.terminal import default_registry, set_default_registry
default_registry()  # the in-process engine first, as the extension does
client = HostClient(HostPaths.for_name("bye", sys.argv[1]))
set_default_registry(client)
print(client.exec("shutdown-host", "echo $$", wait_ms=10_000).output.strip(), flush=True)
"""


def test_a_host_clients_exit_detaches_and_never_closes(host_dir: str) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _CLIENT, host_dir], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    shell = int(out.stdout.strip())
    c = HostClient(HostPaths.for_name("bye", host_dir), autostart=False)
    try:
        rows = {i.session_id: i for i in c.list()}
        assert rows["shutdown-host"].pid == shell and rows["shutdown-host"].status == "idle"
    finally:
        c.detach()


_IMPORT_ALL = r"""
import importlib, pkgutil, signal
import dsh_magics
from dsh_magics import shutdown

handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)}
names = sorted(m.name for m in pkgutil.walk_packages(dsh_magics.__path__, "dsh_magics.")
               if not m.name.endswith("__main__"))
for name in names:
    importlib.import_module(name)
changed = [s for s, h in handlers.items() if signal.getsignal(s) != h]
print(len(names), len(shutdown._callbacks), changed, flush=True)
"""


def test_no_module_registers_an_exit_step_when_imported() -> None:
    """Exit steps come from what a program does (a client, a bridge, a
    panel, the extension), never from an import."""
    out = subprocess.run([sys.executable, "-c", _IMPORT_ALL], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    modules, steps, changed = out.stdout.split(maxsplit=2)
    assert int(modules) > 50
    assert (steps, changed.strip()) == ("0", "[]")
