"""The host's idle policy: with no client, no attached person and no running
job for a while, the host stops (closing its idle terminals) and says why in
its log.

The time is ``DSH_MAGICS_HOST_IDLE`` or ``--idle-timeout`` (seconds, or with
an ``s``, ``m`` or ``h`` suffix; ``0`` or ``off``: never), by default
:data:`DEFAULT_IDLE` (docs/host.md, "Idle policy").
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Mapping

from ..errors import InvalidArgument

ENV_IDLE = "DSH_MAGICS_HOST_IDLE"

#: Four hours.
DEFAULT_IDLE = 4 * 3600.0

_SPEC = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*$", re.IGNORECASE)
_UNIT = {"": 1.0, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_idle(value: object, source: str = ENV_IDLE) -> float | None:
    """Seconds from ``"90"``, ``"30m"``, ``"4h"``; None for ``0``/``off``/``never``."""
    text = str(value).strip().lower()
    if text in ("0", "off", "never", "none"):
        return None
    m = _SPEC.match(text)
    if not m:
        raise InvalidArgument(
            f"{source}={value!r}: give seconds, or a number with s, m or h (e.g. 4h); 0 or off for never",
            field=source,
        )
    seconds = float(m.group(1)) * _UNIT[m.group(2)]
    return seconds if seconds > 0 else None


def configured(environ: Mapping[str, str] | None = None) -> float | None:
    """The idle time from the environment, or the default."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV_IDLE)
    return DEFAULT_IDLE if raw is None or not raw.strip() else parse_idle(raw)


def describe(seconds: float) -> str:
    if seconds >= 3600 and seconds % 3600 == 0:
        return f"{seconds / 3600:g} h"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


class IdleClock:
    """When the host last had something to do (a connection came or went,
    an engine event), and whether it has been idle for ``timeout`` seconds."""

    def __init__(self, timeout: float | None) -> None:
        self.timeout = timeout
        self._last = time.monotonic()
        self._lock = threading.Lock()

    def touch(self) -> None:
        with self._lock:
            self._last = time.monotonic()

    def remaining(self, busy: bool) -> float | None:
        """Seconds until the host is due to stop (None: not while busy or never)."""
        if self.timeout is None:
            return None
        if busy:
            self.touch()
            return None
        with self._lock:
            return max(0.0, self._last + self.timeout - time.monotonic())


__all__ = ["DEFAULT_IDLE", "ENV_IDLE", "IdleClock", "configured", "describe", "parse_idle"]
