"""The bridge's Node process and its line protocol: one JSON request per line, one reply per line.

The process is sequential; :class:`~dsh_magics.harness.bridge.Bridge` holds the lock around it.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

from ...errors import BridgeUnavailable

NODE_PROGRAM = Path(__file__).resolve().parent.parent / "node" / "bridge.mjs"
BOOT_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 30.0


class NodeProcess:
    """One running ``node bridge.mjs`` under ``prefix`` (where the packages are installed).

    Any I/O failure (pipe closed, no answer in time, process exited) raises
    :class:`BridgeUnavailable` and leaves the process stopped.
    """

    def __init__(self, node: str, prefix: Path, node_options: tuple[str, ...] = ()) -> None:
        program = prefix / "bridge.mjs"
        source = NODE_PROGRAM.read_bytes()
        if not program.exists() or program.read_bytes() != source:
            tmp = program.with_suffix(f".tmp-{os.getpid()}")
            tmp.write_bytes(source)
            tmp.replace(program)
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self._next_id = 0
        self._proc: subprocess.Popen[str] | None = subprocess.Popen(
            [node, *node_options, str(program)],
            cwd=prefix,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        proc = self._proc
        threading.Thread(
            target=self._pump_stdout, args=(proc,), name="dsh-bridge-out", daemon=True
        ).start()
        threading.Thread(
            target=self._pump_stderr, args=(proc,), name="dsh-bridge-err", daemon=True
        ).start()
        first = self._read_line(BOOT_TIMEOUT_S)
        try:
            ready = json.loads(first)["result"]["ready"]
        except (ValueError, KeyError, TypeError):
            ready = False
        if not ready:
            self.stop()
            raise BridgeUnavailable(f"node bridge did not start: {first!r}")

    @property
    def alive(self) -> bool:
        proc = self._proc
        return proc is not None and proc.poll() is None and proc.stdin is not None

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None

    def exchange(self, op: str, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """Send one request and read its reply line: ``(request id, reply)``."""
        proc = self._proc
        if proc is None or proc.poll() is not None or proc.stdin is None:
            raise BridgeUnavailable("node bridge is not running")
        self._next_id += 1
        req_id = self._next_id
        try:
            proc.stdin.write(json.dumps({"id": req_id, "op": op, **payload}) + "\n")
            proc.stdin.flush()
        except (BrokenPipeError, OSError) as exc:
            self.stop()
            raise BridgeUnavailable(f"node bridge pipe closed: {exc}") from exc
        return req_id, json.loads(self._read_line(CALL_TIMEOUT_S))

    def stop(self) -> None:
        """Close stdin (the program exits on EOF); kill it if it lingers."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.stdin:
                proc.stdin.close()
        except OSError:
            pass  # already gone: the wait below reaps it either way
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def _pump_stdout(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _pump_stderr(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self._stderr_tail.append(line.rstrip())

    def _read_line(self, timeout: float) -> str:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self.stop()
            raise BridgeUnavailable(f"node bridge did not answer within {timeout:.0f}s") from None
        if line is None:
            proc, self._proc = self._proc, None
            code = proc.wait() if proc is not None else None
            tail = "\n".join(list(self._stderr_tail)[-12:])
            raise BridgeUnavailable(f"node bridge exited (status {code}):\n{tail}")
        return line


def reply_result(req_id: int, reply: dict[str, Any]) -> Any:
    """The ``result`` of a reply to ``req_id``; a mismatched id or an error reply raises."""
    if reply.get("id") != req_id:
        raise BridgeUnavailable(f"node bridge protocol error: reply {reply.get('id')} for {req_id}")
    if not reply.get("ok"):
        err = reply.get("error") or {}
        raise BridgeUnavailable(f"node bridge error ({err.get('kind')}): {err.get('message')}")
    return reply["result"]
