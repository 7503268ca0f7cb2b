"""A real ipykernel driven through jupyter_client, for the magics' kernel tests.

Every iopub message is kept in arrival order (``self.seen``), so a test can
ask what arrived while a given cell was running, or after it went idle.
"""

from __future__ import annotations

import os
import queue
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from jupyter_client import KernelManager


@dataclass
class Execution:
    msg_id: str
    reply: dict[str, Any] | None = None
    # iopub messages whose parent is this cell, in order
    msgs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def status(self) -> str | None:
        return None if self.reply is None else self.reply["content"]["status"]

    def stream(self, name: str = "stdout") -> str:
        return "".join(
            m["content"]["text"]
            for m in self.msgs
            if m["msg_type"] == "stream" and m["content"]["name"] == name
        )

    def of_type(self, *types: str) -> list[dict[str, Any]]:
        return [m for m in self.msgs if m["msg_type"] in types]

    def text(self) -> str:
        """Everything a reader would see: streams, results, displays, errors."""
        out = []
        for m in self.msgs:
            c = m["content"]
            if m["msg_type"] == "stream":
                out.append(c["text"])
            elif m["msg_type"] in ("execute_result", "display_data", "update_display_data"):
                out.append(c["data"].get("text/plain", ""))
            elif m["msg_type"] == "error":
                out.append(f"{c['ename']}: {c['evalue']}")
        return "\n".join(out)


class Kernel:
    """One python3 ipykernel using this interpreter."""

    def __init__(self, env: dict[str, str] | None = None, cwd: str | None = None) -> None:
        self.km = KernelManager(kernel_name="python3")
        # The installed kernelspec says "python"; run the interpreter under test.
        self.km.kernel_spec.argv[0] = sys.executable
        kenv = dict(os.environ)
        kenv.pop("JPY_SESSION_NAME", None)
        kenv.update(env or {})
        self.km.start_kernel(env=kenv, cwd=cwd or os.getcwd())
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=60)
        self.seen: list[dict[str, Any]] = []

    @property
    def pid(self) -> int:
        return self.km.provisioner.process.pid  # type: ignore[union-attr]

    # -- iopub -----------------------------------------------------------
    def _next_iopub(self, timeout: float) -> dict[str, Any] | None:
        try:
            msg = self.kc.get_iopub_msg(timeout=max(0.01, timeout))
        except queue.Empty:
            return None
        msg["_received"] = time.monotonic()
        self.seen.append(msg)
        return msg

    def collect_until(
        self, pred: Callable[[dict[str, Any]], bool], timeout: float = 30
    ) -> dict[str, Any]:
        """Read iopub until a message satisfies ``pred`` (also checks ones already seen)."""
        for m in self.seen:
            if pred(m):
                return m
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = self._next_iopub(deadline - time.monotonic())
            if m is not None and pred(m):
                return m
        raise AssertionError(f"no matching iopub message within {timeout}s")

    def drain(self, seconds: float) -> list[dict[str, Any]]:
        """Everything that arrives within ``seconds`` (used only to check that
        something does NOT arrive, never as synchronisation)."""
        got = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            m = self._next_iopub(deadline - time.monotonic())
            if m is not None:
                got.append(m)
        return got

    # -- execution -------------------------------------------------------
    def submit(self, code: str) -> str:
        return self.kc.execute(code, allow_stdin=False)

    def finish(self, msg_id: str, timeout: float = 60) -> Execution:
        """Wait for the cell's reply and for its iopub 'idle'."""
        ex = Execution(msg_id)
        deadline = time.monotonic() + timeout
        while ex.reply is None:
            try:
                rep = self.kc.get_shell_msg(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no execute_reply within {timeout}s") from None
            if rep["parent_header"].get("msg_id") == msg_id:
                ex.reply = rep
        self.collect_until(
            lambda m: (
                m["parent_header"].get("msg_id") == msg_id
                and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"
            ),
            timeout=max(1.0, deadline - time.monotonic()),
        )
        ex.msgs = [m for m in self.seen if m["parent_header"].get("msg_id") == msg_id]
        return ex

    def run(self, code: str, timeout: float = 60, ok: bool = True) -> Execution:
        ex = self.finish(self.submit(code), timeout)
        if ok and ex.status != "ok":
            raise AssertionError(f"cell failed: {code!r}\n{ex.text()}")
        return ex

    def value(self, expr: str, timeout: float = 30) -> str:
        """``repr``-free text of a Python expression evaluated in the kernel."""
        ex = self.run(f"print({expr})", timeout)
        return ex.stream().strip()

    def shutdown(self) -> None:
        try:
            self.kc.stop_channels()
        finally:
            if self.km.has_kernel:
                self.km.shutdown_kernel(now=False)


@contextmanager
def loaded_kernel(cwd: str, setup: str = "%load_ext dsh_magics") -> Iterator[Kernel]:
    """A kernel in ``cwd`` that ran ``setup`` (the extension loaded), shut down afterwards."""
    k = Kernel(cwd=cwd)
    try:
        k.run(setup)
        yield k
    finally:
        k.shutdown()


def idle_terminals(kernel: Kernel) -> None:
    """Ctrl-C to every job still running in the kernel's terminals, and wait for it:
    a failing test must not leave a job running into the next one."""
    kernel.run(
        "from dsh_magics.terminal import default_registry as _reg\n"
        "for _t in _reg().list():\n"
        "    if _t.job_id:\n"
        "        _reg().interrupt(_t.session_id)\n"
        "        _reg().job(_t.job_id).wait(30)\n"
    )
