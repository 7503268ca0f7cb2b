"""The whole story with real processes: a stand-in Jupyter server starts a
notebook kernel, the kernel's terminal lives in the host, a kernel restart
keeps the terminal and its running job, a second notebook reaches it with
--session, and when the server dies the host takes every terminal with it."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import time

import pytest
from jupyter_client import BlockingKernelClient

from dsh_magics.notebook.identity import session_id_for_path
from dsh_magics.terminal.core.procs import alive as _alive

from .conftest import host_pids, pids_with_env, wait_until

pytestmark = pytest.mark.kernel


class StandIn:
    """The stand-in server process and the kernels it started."""

    def __init__(self, cwd: str, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(os.path.dirname(__file__), "standin_server.py"), cwd],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
        )  # fmt: skip
        self.pid = self.ask(None)["ready"]
        self.clients: dict[str, BlockingKernelClient] = {}

    def ask(self, req: dict | None, timeout: float = 90) -> dict:
        if req is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the stand-in server died"
        out = json.loads(line)
        assert "error" not in out, out["error"]
        return out

    def start(self, name: str, notebook: str) -> dict:
        info = self.ask({"cmd": "start", "name": name, "notebook": notebook})
        kc = BlockingKernelClient(connection_file=info["connection_file"])
        kc.load_connection_file()
        # No heartbeat channel: without a manager, a not-yet-beating heartbeat
        # reads as a dead kernel. Readiness is the kernel_info round trip.
        kc.start_channels(hb=False)
        kc.wait_for_ready(timeout=60)
        self.clients[name] = kc
        return info

    def run(self, name: str, code: str, timeout: float = 60) -> str:
        """Execute a cell; its stdout, or an AssertionError with the error."""
        kc = self.clients[name]
        msg_id = kc.execute(code)
        out: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                msg = kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"cell timed out: {code!r}") from None
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            t, c = msg["msg_type"], msg["content"]
            if t == "stream" and c["name"] == "stdout":
                out.append(c["text"])
            elif t == "stream" and "UsageError" in c["text"]:
                raise AssertionError(f"cell failed: {code!r}: {c['text']}")
            elif t == "error":
                raise AssertionError(f"cell failed: {code!r}: {c['ename']}: {c['evalue']}")
            elif t == "status" and c["execution_state"] == "idle":
                return "".join(out)

    def close(self) -> None:
        for kc in self.clients.values():
            kc.stop_channels()
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()



def test_terminal_survives_kernel_restart_and_dies_with_the_server(host_dir: str, tmp_path) -> None:
    notebook = str(tmp_path / "analysis.ipynb")
    sid = session_id_for_path(notebook)
    env = dict(os.environ, DSH_MAGICS_HOST_DIR=host_dir)
    env.pop("DSH_MAGICS_HOST", None)  # automatic mode: the server is detected
    server = StandIn(str(tmp_path), env)
    try:
        kernel_pids = [server.start("nb", notebook)["pid"]]
        out = server.run("nb", "%load_ext dsh_magics\nimport dsh_magics.host as h\nprint(h.current_mode().name)")
        assert out.strip() == f"jupyter-{server.pid}"
        server.run("nb", "%bash_exec --timeout 10 cd /tmp && export MARK=kept && f() { echo fn-$1; }")
        out = server.run("nb", "j = %bash_exec sleep 5; echo survived\nprint(j.id)")
        job_id = out.strip().splitlines()[-1]
        assert job_id.startswith("bash-")

        restart = server.ask({"cmd": "restart", "name": "nb"})
        assert not _alive(restart["old_pid"]) and restart["new_pid"] != restart["old_pid"]
        kernel_pids.append(restart["new_pid"])
        died_at = time.time()
        server.clients["nb"].wait_for_ready(timeout=60)

        server.run("nb", "%load_ext dsh_magics")
        out = server.run(
            "nb",
            f"r = %bash_wait {job_id}\nprint(repr(r.output), r.status, r.exit_code, r.ended_at > {died_at})",
            timeout=30,
        )
        assert out.strip() == "'survived\\n' completed 0 True"
        out = server.run("nb", 'r = %bash_exec --timeout 10 echo "$PWD $MARK $(f x)"\nprint(r.output, end="")')
        assert out == "/tmp kept fn-x\n"

        # Another notebook of the same server addresses that terminal by id.
        kernel_pids.append(server.start("other", str(tmp_path / "other.ipynb"))["pid"])
        server.run("other", "%load_ext dsh_magics")
        out = server.run("other", f'r = %bash_exec --session {sid} --timeout 10 echo "$MARK"\nprint(r.output, end="")')
        assert out == "kept\n"

        # The server dies: the host closes every terminal and exits.
        hosts = host_pids(host_dir, with_reapers=True)
        assert len(hosts) == 2, hosts
        server.run("nb", "%bash_exec sleep 300 &")
        wait_until(lambda: len(pids_with_env("DSH_MAGICS_SESSION", sid)) >= 2, timeout=10)
        os.kill(server.pid, signal.SIGKILL)
        server.proc.wait()
        wait_until(lambda: not any(_alive(p) for p in hosts), timeout=30, msg="host outlived the server")
        wait_until(lambda: not pids_with_env("DSH_MAGICS_SESSION", sid), timeout=10, msg="terminal processes survived")
        assert not os.path.exists(os.path.join(host_dir, f"jupyter-{server.pid}.sock"))
        # The kernels notice their parent is gone too (ipykernel's own poller).
        wait_until(lambda: not any(_alive(p) for p in kernel_pids), timeout=30, msg="kernels outlived the server")
    finally:
        server.close()


