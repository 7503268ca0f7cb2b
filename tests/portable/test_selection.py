"""Which process layer the engine uses, and that everything it starts uses
the same one."""

from __future__ import annotations

import os
import subprocess
import sys

import psutil
import pytest

from dsh_magics.errors import InvalidArgument
from dsh_magics.terminal.core import proclayer, procs
from dsh_magics.terminal.core.proclayer import portable, procfs

ON_PROC = os.path.exists("/proc/self/stat")


def test_choice_from_the_environment() -> None:
    assert proclayer.use_procfs({}) is ON_PROC
    assert proclayer.use_procfs({"DSH_MAGICS_PROCFS": "1"}) is ON_PROC
    for off in ("0", "false", "no", "off", " OFF "):
        assert proclayer.use_procfs({"DSH_MAGICS_PROCFS": off}) is False
        assert proclayer.implementation({"DSH_MAGICS_PROCFS": off}) is portable
    with pytest.raises(InvalidArgument, match="DSH_MAGICS_PROCFS must be 0 or 1"):
        proclayer.use_procfs({"DSH_MAGICS_PROCFS": "maybe"})


def test_both_layers_offer_the_same_functions() -> None:
    names = [n for n in vars(proclayer.ProcessLayer) if not n.startswith("_")]
    assert len(names) == 13, names
    for name in names:
        assert callable(getattr(procfs, name)) and callable(getattr(portable, name)), name
    # ``procs`` picks one of the two, whole.
    assert procs.LAYER in (procfs, portable)
    assert (procs.TOP_LEVEL, procs.TTY_READ_ELSEWHERE, procs.BUSY_OR_UNKNOWN) == (
        proclayer.TOP_LEVEL,
        proclayer.TTY_READ_ELSEWHERE,
        proclayer.BUSY_OR_UNKNOWN,
    )


@pytest.mark.skipif(not ON_PROC, reason="checks the forced choice on Linux")
def test_forced_portable_reaches_the_engine_and_its_watchdog() -> None:
    """A process started with DSH_MAGICS_PROCFS=0 binds the portable answers,
    and the watchdog it starts (which kills a dead owner's terminals) gets
    the same setting in its otherwise clean environment."""
    code = (
        "import os, sys\n"
        "from dsh_magics.terminal import Registry\nfrom dsh_magics.terminal.core import procs\n"
        "r = Registry(login=False)\n"
        "r.attach('sel')\n"
        "print(procs.LAYER.__name__, procs.kill_tree.__module__, flush=True)\n"
        "sys.stdin.readline()\n"
        "r.close_all()\n"
    )
    env = dict(os.environ, DSH_MAGICS_PROCFS="0")
    owner = subprocess.Popen(
        [sys.executable, "-c", code],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        line = owner.stdout.readline().split()
        assert line == ["dsh_magics.terminal.core.proclayer.portable", "dsh_magics.terminal.core.procs"], line
        watchdogs = [
            p
            for p in psutil.Process(owner.pid).children()
            if "dsh_magics.terminal.core.watchdog" in " ".join(p.cmdline())
        ]
        assert len(watchdogs) == 1, watchdogs
        assert watchdogs[0].environ().get("DSH_MAGICS_PROCFS") == "0"
    finally:
        owner.communicate("\n", timeout=30)
    assert owner.returncode == 0


@pytest.mark.skipif(not ON_PROC, reason="compares with /proc")
def test_both_layers_name_the_same_executable() -> None:
    """``executable`` (the start-up check for an ``exec`` in a profile) says
    the same in both layers, and has no side effect on ``identity``."""
    pid = os.getpid()
    assert procfs.executable(pid) == portable.executable(pid) == os.path.realpath(sys.executable)
    assert procfs.executable(2**22 + 12345) is None and portable.executable(2**22 + 12345) is None
