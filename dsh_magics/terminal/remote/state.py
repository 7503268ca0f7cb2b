"""The remote terminal's state, declared once with its types for the three
parts that share it (connection, job stream, keyboard); the values are set in
``RemoteTerminal.__init__``. The methods below are the ones a part calls on
another; each part defines its own."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ptyprocess import PtyProcess  # type: ignore[import-untyped]

from ... import jobs
from ..config import TerminalConfig
from ..core.cleaner import Cleaner
from ..core.jobview import Running
from ..core.markers import MarkerScanner
from ..core.ring import Ring
from ..result import Result
from .targets import Target

Emit = Callable[[dict[str, Any]], None]


class RemoteState:
    session_id: str
    config: TerminalConfig
    target: Target
    created_at: float
    _jobs: jobs.JobTable
    _emit: Emit
    _lock: threading.RLock
    _wlock: threading.Lock
    _reap_lock: threading.Lock
    _out_cond: threading.Condition
    _ring: Ring
    _cleaner: Cleaner
    _scanner: MarkerScanner
    _running: Running | None
    _cwd: str | None
    _output_seq: int
    _dead: bool
    _closed: bool
    _exit_code: int | None
    _exit_signal: int | None
    _ready_nonce: str | None
    _ready_status: int | None
    _ready: threading.Event
    _token: str
    _startup_raw: bytearray
    _echo_nonce: str | None
    _held: list[bytes]
    _resync_echo: bool
    _pipestatus: tuple[int, ...] | None
    _debug_trap: str | None
    _trap_text: bytearray | None
    _aborted: bool
    _tail: bytearray
    _proc: PtyProcess | None
    _pidfd: int | None
    _wake_r: int | None
    _wake_w: int | None
    _settled: list[tuple[jobs.Job, str, Result]]
    _reader: threading.Thread | None

    def _type(self, text: str) -> None:
        raise NotImplementedError

    def _type_quietly(self, text: str) -> None:
        raise NotImplementedError

    def _poke(self) -> None:
        raise NotImplementedError

    def _on_pty(self, data: bytes) -> None:
        raise NotImplementedError

    def _release_held(self, nonce: str) -> None:
        raise NotImplementedError

    def _send_held_interrupts(self) -> None:
        raise NotImplementedError

    def _deliver(self) -> None:
        raise NotImplementedError

    def _finish(
        self,
        run: Running,
        status: str,
        code: int | None,
        cwd: str | None,
        *,
        signal_no: int | None = None,
        note: str | None = None,
    ) -> None:
        raise NotImplementedError

    def interrupt(self) -> jobs.Job | None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError
