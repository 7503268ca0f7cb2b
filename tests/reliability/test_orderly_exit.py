"""An orderly kernel exit closes its terminals in order: a real ipykernel
(jupyter_client) opens a terminal on the process-wide engine, and is asked
to shut down. Its exit step (dsh_magics.shutdown, TERMINALS) must run while
the shells are still there: Python used to join the engine's spawner thread
(a ``ThreadPoolExecutor`` worker) before ``atexit``, so every child got its
death signal first; a container's shell then outlived its killed
``podman exec`` client, idle or with its job, and its EXIT trap never ran."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import pids_with_env, wait_until
from tests.magics.kernel_support import Kernel

CELL = """
from dsh_magics.terminal.default_engine import default_registry
reg = default_registry()
target = {target!r}
if target:
    reg.attach("c", target=target)
res = reg.exec("c", "trap 'echo ran > {marker}' EXIT; echo up", wait_ms=30_000)
assert res.output == "up\\n", res
if {busy!r}:
    reg.exec("c", "echo busy-{mark}; sleep 300", wait_ms=0)
print("ready")
"""


def _open_and_exit(tmp_path: Path, target: str | None, busy: bool, mark: str) -> Path:
    marker = tmp_path / f"exit-trap-{mark}"
    k = Kernel(env={"DSH_TEST_MARK": mark})
    try:
        ex = k.run(CELL.format(target=target, marker=marker, busy=busy, mark=mark), timeout=60)
        assert "ready" in ex.stream(), ex.text()
    finally:
        k.shutdown()  # a shutdown request: the kernel's interpreter exits in order
    assert not k.km.is_alive()
    return marker


def _in_box(box) -> list[str]:
    """Live processes in the container but its pid 1 and the ``ps`` asking
    (a killed job stays a zombie there: the container's pid 1 is a
    ``sleep``, which reaps nothing)."""
    out = box.exec("ps", "-eo", "pid=,stat=,args=").stdout
    return [
        line.strip()
        for line in out.splitlines()
        if line.split()[0] != "1" and not line.split()[1].startswith("Z") and "ps -eo" not in line
    ]


@pytest.mark.parametrize("busy", [False, True], ids=["idle", "busy"])
def test_a_container_terminal_is_closed_before_the_kernel_exits(tmp_path, podman_box, busy):
    before = _in_box(podman_box)
    mark = f"orderly-podman-{'busy' if busy else 'idle'}"
    marker = _open_and_exit(tmp_path, podman_box.target, busy, mark)

    def left() -> list[str]:
        return [p for p in _in_box(podman_box) if p not in before]

    # The close is over when the kernel has exited; a look right after must see nothing.
    assert left() == [], f"left in the container after the kernel exited: {left()}"
    wait_until(marker.exists, timeout=5, msg="the shell's EXIT trap ran")


def test_a_local_terminal_is_closed_before_the_kernel_exits(tmp_path):
    mark = "orderly-local-busy"
    marker = _open_and_exit(tmp_path, None, True, mark)
    wait_until(lambda: pids_with_env("DSH_TEST_MARK", mark) == [], timeout=10, msg="the terminal's processes gone")
    assert marker.read_text() == "ran\n"
