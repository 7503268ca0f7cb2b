"""The stdio wire, read and written by the event loop itself.

The SDK's ``stdio_server`` reads each line and writes and flushes each
message through anyio's worker threads: three thread hops per request and
its reply, which on a busy machine cost more than this server's own work for
a call (benchmarks/README.md, ``bench_mcp.py``). Here the event loop watches
the pipes (``connect_read_pipe`` / ``connect_write_pipe``) and the SDK gets
them as its ``stdin`` and ``stdout``; framing, JSON and sessions stay the
SDK's. As the SDK does, while serving, fd 0 reads ``/dev/null`` and fd 1
goes to stderr, so nothing a child prints reaches the wire.

When the wire is not a pipe, socket or terminal (stdin redirected from a
file), :func:`wire_streams` yields ``(None, None)`` and the SDK's own
transport serves it.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio

#: Longest request line read whole; a longer one is skipped and reaches the
#: SDK as a line that is not JSON (it answers with a parse error).
MAX_LINE = 64 * 1024 * 1024


class _Drain(asyncio.BaseProtocol):
    """Flow control of the write pipe: writers wait while the client lags."""

    def __init__(self) -> None:
        self._can_write = asyncio.Event()
        self._can_write.set()
        self.lost = False

    def pause_writing(self) -> None:
        self._can_write.clear()

    def resume_writing(self) -> None:
        self._can_write.set()

    def connection_lost(self, exc: BaseException | None) -> None:
        self.lost = True
        self._can_write.set()

    async def drained(self) -> None:
        await self._can_write.wait()


class Lines:
    """The client's requests, one text line at a time (``async for``)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> Lines:
        return self

    async def __anext__(self) -> str:
        try:
            data = await self._reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as e:
            if not e.partial:
                raise StopAsyncIteration from None
            data = e.partial
        except asyncio.LimitOverrunError:
            await self._skip_line()
            return "(a request line longer than the server reads)\n"
        return data.decode("utf-8", "replace")

    async def _skip_line(self) -> None:
        while True:
            try:
                await self._reader.readuntil(b"\n")
                return
            except asyncio.LimitOverrunError as e:
                await self._reader.readexactly(e.consumed)
            except asyncio.IncompleteReadError:
                return


class Wire:
    """The replies: each written by the loop straight to the pipe."""

    def __init__(self, transport: asyncio.WriteTransport, drain: _Drain) -> None:
        self._transport = transport
        self._drain = drain

    async def write(self, text: str) -> None:
        if self._drain.lost or self._transport.is_closing():
            raise anyio.ClosedResourceError  # the client is gone; the SDK's writer ends
        self._transport.write(text.encode("utf-8"))
        await self._drain.drained()

    async def flush(self) -> None:
        """Nothing buffered here: a write reaches the pipe, or waits for it."""


@asynccontextmanager
async def wire_streams() -> AsyncIterator[tuple[Lines, Wire] | tuple[None, None]]:
    """``(stdin, stdout)`` for the SDK's ``stdio_server``; ``(None, None)``
    if fd 0 or 1 cannot be watched by the loop (then the SDK serves them)."""
    loop = asyncio.get_running_loop()
    try:
        private_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        yield None, None
        return
    try:
        private_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        os.close(private_in)
        yield None, None
        return
    reader = asyncio.StreamReader(limit=MAX_LINE)
    # The file objects own the two fds from here on: closing them (or their
    # transports) closes the fds once, never a number the process reused.
    pipe_in = os.fdopen(private_in, "rb", buffering=0)
    pipe_out = os.fdopen(private_out, "wb", buffering=0)
    read_transport: Any = None
    write_transport: Any = None
    try:
        read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), pipe_in)
        write_transport, drain = await loop.connect_write_pipe(_Drain, pipe_out)
    except (ValueError, OSError):
        # Not a pipe, socket or character device (a file): the SDK's way.
        for t, f in ((read_transport, pipe_in), (write_transport, pipe_out)):
            if t is not None:
                t.close()
            else:
                with suppress(OSError):
                    f.close()
        yield None, None
        return
    restore = _divert()
    try:
        yield Lines(reader), Wire(write_transport, drain)
    finally:
        restore()
        read_transport.close()
        write_transport.close()


def _divert() -> Any:
    """Point fd 0 at /dev/null and fd 1 at stderr; returns the undo."""
    saved: list[tuple[int, int]] = []
    for fd, target in ((0, os.open(os.devnull, os.O_RDONLY)), (1, os.dup(2))):
        try:
            saved.append((fd, fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)))
            os.dup2(target, fd)
        except OSError as e:
            # fd 0 or 1 is not open (a client that closed it): nothing to
            # protect there; say so on stderr, which hosts keep as the log
            with suppress(OSError, ValueError):
                print(f"dsh-magics mcp: fd {fd} left as it is ({e})", file=sys.stderr, flush=True)
        finally:
            os.close(target)

    def restore() -> None:
        for fd, copy in saved:
            with suppress(OSError):
                # The loop made the wire non-blocking; a terminal shared with
                # the shell that started us must not stay so.
                os.set_blocking(copy, True)
            with suppress(OSError):
                os.dup2(copy, fd)
            with suppress(OSError):
                os.close(copy)

    return restore
