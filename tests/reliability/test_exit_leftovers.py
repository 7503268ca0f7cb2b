"""What a terminal leaves on disk when its Python process goes away.

Each case runs a real interpreter that opens a terminal and then ends: in
order (``atexit``), by ``os._exit`` (what ipykernel does when its server
vanishes), or killed. Afterwards no process may carry the terminal's marker
and no per-terminal scratch directory may remain. The scratch base is a
private directory, so other test runs on the machine cannot interfere.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import pids_with_env

from .conftest import wait_until

ENDINGS = {
    "default-registry-atexit": "pass",
    "own-registry-never-closed": "pass",
    "os._exit": "os._exit(0)",
    "SIGKILL": "os.kill(os.getpid(), signal.SIGKILL)",
}

SCRIPT = textwrap.dedent(
    """
    import os, signal, sys
    from dsh_magics import terminal
    if sys.argv[1] == "own-registry-never-closed":
        reg = terminal.Registry(login=False)
    else:
        reg = terminal.default_registry()
    res = reg.exec("leftovers", "sleep 300 & echo up", wait_ms=20_000)
    assert res.output.endswith("up\\n"), res
    print(os.listdir(os.environ["XDG_RUNTIME_DIR"]), flush=True)
    {ending}
    """
)

@pytest.mark.parametrize(
    "ending",
    [
        "default-registry-atexit",
        "own-registry-never-closed",
        "os._exit",
        "SIGKILL",
    ],
)
def test_nothing_left_when_the_owner_goes(tmp_path: Path, ending: str) -> None:
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    mark = f"leftovers-{os.getpid()}-{ending}"
    env = dict(os.environ, XDG_RUNTIME_DIR=str(runtime), TMPDIR=str(runtime), DSH_TEST_MARK=mark)
    code = SCRIPT.replace("{ending}", ENDINGS[ending])
    proc = subprocess.run(
        [sys.executable, "-c", code, ending], env=env, capture_output=True, text=True, timeout=60
    )
    assert "dsh-magics-" in proc.stdout, (proc.stdout, proc.stderr)  # the terminal was there
    wait_until(lambda: pids_with_env("DSH_TEST_MARK", mark) == [], 10, msg="every process of the terminal gone")
    wait_until(
        lambda: not [p for p in runtime.iterdir() if p.name.startswith("dsh-magics-")],
        2,
        msg=f"scratch dirs removed (left: {sorted(p.name for p in runtime.iterdir())})",
    )
