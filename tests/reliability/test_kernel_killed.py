"""The kernel is killed (SIGKILL: no atexit, no signal handler) while the
terminal host keeps its terminals (issue 32, §4).

Real processes throughout: a stand-in Jupyter server (tests/host/standin_server.py)
starts the notebook kernels, their terminals live in the host. The killed
kernel's job runs on and ends in the host, its output whole; another
notebook's terminal is not touched; a new kernel of the same notebook finds
the terminal with its state and the job's result; when the server goes, the
host takes everything with it.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_magics.notebook.identity import session_id_for_path
from dsh_magics.terminal.core.procs import alive
from tests.conftest import pids_with_env, wait_until
from tests.host.conftest import host_pids, private_host_dir
from tests.host.test_kernel import StandIn

pytestmark = pytest.mark.kernel


@pytest.fixture
def host_dir() -> Iterator[str]:
    with private_host_dir() as d:
        yield d


def test_a_killed_kernels_terminal_and_job_live_on_in_the_host(host_dir: str, tmp_path: Path) -> None:
    notebook, other = str(tmp_path / "killed.ipynb"), str(tmp_path / "bystander.ipynb")
    sid, other_sid = session_id_for_path(notebook), session_id_for_path(other)
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    env = dict(os.environ, DSH_MAGICS_HOST_DIR=host_dir, DSH_MAGICS_LOGIN="0")
    env.pop("DSH_MAGICS_HOST", None)  # automatic mode: the server is detected
    server = StandIn(str(tmp_path), env)
    try:
        pid = server.start("nb", notebook)["pid"]
        server.start("other", other)
        for name in ("nb", "other"):
            server.run(name, "%load_ext dsh_magics")
        server.run("nb", "%bash_exec --timeout 10 cd /tmp && export MARK=kept")
        server.run("other", "%bash_exec --timeout 10 export MINE=untouched")
        out = server.run("nb", f"j = %bash_exec echo early; read -r word < {gate}; echo late $word\nprint(j.id)")
        job_id = out.strip().splitlines()[-1]
        shell_pids = set(pids_with_env("DSH_MAGICS_SESSION", sid))
        assert shell_pids, "the notebook's terminal has no process"

        os.kill(pid, signal.SIGKILL)
        wait_until(lambda: not alive(pid), 15, msg="the kernel did not die")
        # The host and the killed kernel's terminal are still there; the job runs on.
        assert host_pids(host_dir) and shell_pids <= set(pids_with_env("DSH_MAGICS_SESSION", sid))
        with open(gate, "w") as g:  # blocks until the job's `read` opened it: the job still runs
            g.write("go\n")

        assert server.run("other", 'r = %bash_exec --timeout 10 echo "$MINE"\nprint(r.output, end="")') == "untouched\n"
        server.start("nb-again", notebook)  # the same notebook, a new kernel: the same session id
        server.run("nb-again", "%load_ext dsh_magics")
        out = server.run(
            "nb-again", f"r = %bash_wait --timeout 20 {job_id}\nprint(r.status, r.exit_code, repr(r.output))"
        )
        assert out.strip() == "completed 0 'early\\nlate go\\n'"
        out = server.run("nb-again", 'r = %bash_exec --timeout 10 echo "$PWD $MARK"\nprint(r.output, end="")')
        assert out == "/tmp kept\n"

        # The server goes: the host closes every terminal and exits.
        hosts = host_pids(host_dir, with_reapers=True)
        os.kill(server.pid, signal.SIGKILL)
        server.proc.wait()
        wait_until(lambda: not any(alive(p) for p in hosts), 30, msg="the host outlived the server")
        wait_until(
            lambda: not pids_with_env("DSH_MAGICS_SESSION", sid) and not pids_with_env("DSH_MAGICS_SESSION", other_sid),
            10,
            msg="terminal processes survived",
        )
    finally:
        server.close()
