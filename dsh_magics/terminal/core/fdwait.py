"""Waiting for descriptors to become readable, with no limit on their numbers.

``select.select`` refuses any descriptor numbered 1024 (``FD_SETSIZE``) or
more, so in a process with that many files open (a busy server, a host with
many terminals) no terminal could start: its reader's first ``select``
raised (tests/terminal/test_many_descriptors.py). On Linux a wait on such a
descriptor uses ``poll``, which has no such limit; below it, ``select`` as
before (it times waits to the microsecond, ``poll`` to the millisecond).
Elsewhere it stays ``select``: macOS's ``poll`` does not support terminal
devices, so there the limit remains (docs/portability.md).
"""

from __future__ import annotations

import errno
import math
import select
import sys
from collections.abc import Iterable

_POLL = sys.platform.startswith("linux") and hasattr(select, "poll")
_FD_SETSIZE = 1024
_READ = select.POLLIN if _POLL else 0  # what select counts as readable; hang-ups and errors come anyway


def readable(fds: Iterable[int], timeout: float | None) -> list[int]:
    """The descriptors of ``fds`` that are readable (data, end of file or a
    hang-up) within ``timeout`` seconds (None: no limit), as the first list
    ``select.select`` returns, and ``OSError(EBADF)`` for a closed one, as
    ``select`` raises it. The wait is at least ``timeout``: ``poll`` counts
    whole milliseconds, rounded up."""
    fds = list(fds)
    if not _POLL or max(fds, default=0) < _FD_SETSIZE:
        # select where it can: it waits to the microsecond, and the
        # interrupter's hold (LAUNCH_POLL_S, 2 ms) is timed by these waits
        return select.select(fds, [], [], timeout)[0]  # type: ignore[no-any-return]
    poller = select.poll()
    for fd in fds:
        poller.register(fd, _READ)
    ms = None if timeout is None else max(0, math.ceil(timeout * 1000))
    events = poller.poll(ms)
    if any(ev & select.POLLNVAL for _, ev in events):
        raise OSError(errno.EBADF, "a descriptor waited on is not open")
    return [fd for fd, _ in events]
