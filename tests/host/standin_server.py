"""A stand-in for a Jupyter server: it starts kernels the way a server does
(jupyter_client, with ``JPY_SESSION_NAME`` naming the notebook, so the kernel
sees ``JPY_PARENT_PID`` = this process) and restarts them on request.

Driven over stdin/stdout with one JSON object per line, so a test can kill
it like a crashed server::

    {"cmd": "start", "name": "nb1", "notebook": "/path/nb.ipynb"}
      -> {"name", "connection_file", "pid"}
    {"cmd": "restart", "name": "nb1"} -> {"old_pid", "new_pid"}
    {"cmd": "quit"}
"""

from __future__ import annotations

import json
import os
import sys

from jupyter_client import KernelManager


def main() -> None:
    kernels: dict[str, KernelManager] = {}
    cwd = sys.argv[1]

    def say(obj: dict) -> None:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    say({"ready": os.getpid()})
    for line in sys.stdin:
        req = json.loads(line)
        try:
            if req["cmd"] == "start":
                # The connection file in the test's directory, as a server keeps
                # it in its runtime directory: the tests kill this process and
                # its kernels, so jupyter_client's own clean-up never runs, and
                # a file in /tmp would be left behind (151 were, over a day).
                conn = os.path.join(cwd, f"kernel-{req['name']}-{len(kernels)}.json")
                km = KernelManager(kernel_name="python3", connection_file=conn)
                km.kernel_spec.argv[0] = sys.executable
                env = dict(os.environ, JPY_SESSION_NAME=req["notebook"])
                km.start_kernel(env=env, cwd=cwd)
                kernels[req["name"]] = km
                say({"name": req["name"], "connection_file": km.connection_file, "pid": km.provisioner.process.pid})
            elif req["cmd"] == "restart":
                km = kernels[req["name"]]
                old = km.provisioner.process.pid
                km.restart_kernel(now=False)
                say({"old_pid": old, "new_pid": km.provisioner.process.pid})
            elif req["cmd"] == "quit":
                for km in kernels.values():
                    km.shutdown_kernel(now=False)
                say({"bye": True})
                return
        except Exception as e:  # noqa: BLE001 - report to the test
            say({"error": f"{type(e).__name__}: {e}"})


if __name__ == "__main__":
    main()
