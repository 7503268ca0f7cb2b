"""The attach loop: keys from the local terminal to the session, screens back.

Three threads: this one reads the keyboard (and the signal pipe), an event
thread follows the session's live stream from the host (host/stream.py), and
a draw thread fetches the screen and paints what differs when the stream's
bytes cannot be written as they are.

**Live and drawn.** The stream starts with the terminal's screen, painted in
full. While the local window has the terminal's size, the stream's bytes are
written to it as they come (a key's echo is one hop from the terminal's
reader): the local terminal then shows what the terminal's emulator shows.
The host sends a screen instead of bytes after a resize, at an alternate
screen switch and when this client falls behind; each is painted in full and
the bytes go on from there. In a window of another size (a read-only viewer,
or one whose size another viewer set) bytes only say "changed": the draw
thread fetches the screen and paints it, at most :data:`FRAME_S` apart. Every way out (detach
key, the session closed, the host gone, SIGTERM/SIGHUP, an error) goes
through :meth:`Attacher.run`'s ``finally``, which puts the local terminal back.
"""

from __future__ import annotations

import base64
import os
import signal
import threading
import time
import uuid
from dataclasses import dataclass
from typing import Any

from ..errors import DshError, HostUnavailable, NoSuchSession, NotRunning, SessionBusy, ShellExited
from ..host.runtime import HostPaths
from ..terminal.core import fdwait
from . import render
from .link import Conn, Events
from .local_tty import RawTerminal, Signals, write_all

#: The default detach key: Ctrl-] (as telnet's and docker's).
DEFAULT_DETACH = "C-]"

#: Least time between two screen fetches while output keeps coming (60 a
#: second): each fetch holds the terminal's lock for a moment, and a faster
#: redraw than the eye follows only slows the job down. A change after a
#: quiet moment is fetched at once.
FRAME_S = 1 / 60

#: Keys are sent in pieces of at most this many characters (a paste).
_CHUNK = 16 * 1024

CTRL_C = b"\x03"


def parse_detach_key(spec: str) -> bytes:
    """``C-x`` (Ctrl and one of ``@ A-Z [ \\ ] ^ _``, any case) as its byte."""
    s = spec.strip()
    if len(s) == 3 and s[:2].upper() == "C-":
        ch = s[2].upper()
        if "@" <= ch <= "_":
            code = ord(ch) - 0x40
            if code not in (0x03, 0x0D, 0x1B):  # Ctrl-C, Enter and Esc are needed as keys
                return bytes([code])
    raise ValueError(
        f"detach key {spec!r}: give C- and one of @, A-Z, [, \\, ], ^, _ (not C-c, C-m or C-[)"
    )


@dataclass
class Outcome:
    """How the attach ended: exit status and the line said after the terminal is back."""

    status: int
    message: str


class Attacher:
    """One person attached to ``session`` of the host at ``paths``."""

    def __init__(
        self,
        paths: HostPaths,
        host_name: str,
        session: str,
        *,
        read_only: bool = False,
        detach_key: bytes = b"\x1d",
        fd_in: int = 0,
        fd_out: int = 1,
    ) -> None:
        self.paths = paths
        self.host_name = host_name
        self.session = session
        self.read_only = read_only
        self.detach_key = detach_key
        self.tty = RawTerminal(fd_in, fd_out)
        self.caller = f"attach-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        client = {"pid": os.getpid(), "purpose": "attach", "session": session, "read_only": read_only,
                  "caller": self.caller}  # fmt: skip
        self._client = client
        self._keys: Conn | None = None
        self._draw: Conn | None = None
        self._events: Events | None = None
        self._signals = Signals()
        self._cond = threading.Condition()
        self._dirty = False  # the stream's first screen draws the first frame
        self._live = False  # writing the stream's bytes as they come (module docstring)
        self._resized = False
        self._outcome: Outcome | None = None
        self._stopping = False
        self._screen_size: tuple[int, int] | None = None
        self._painter = render.Painter()

    # ------------------------------------------------------------------
    def open(self) -> dict[str, Any]:
        """Connect and check the session before the terminal is touched."""
        self._keys = Conn(self.paths, self._client)
        info = self._keys.call("info", {"session_id": self.session})
        if info.get("status") == "dead":
            raise ShellExited(
                f"session {self.session!r} in host {self.host_name}: its shell has exited; "
                "nothing to attach to (its next command starts a fresh shell)",
                session_id=self.session,
            )
        self._draw = Conn(self.paths, self._client)
        self._events = Events(self.paths, self._client, ["terminal"])
        self._events.watch(self.session)
        return info  # type: ignore[no-any-return]

    def run(self) -> Outcome:
        """Attach until detached or ended; the local terminal is restored on every path."""
        if self._keys is None:
            self.open()
        threads: list[threading.Thread] = []
        self._signals.install()
        try:
            self.tty.enter()
            if not self.read_only:
                self._set_size()
            threads = [
                threading.Thread(target=self._follow_events, name="dsh-attach-events", daemon=True),
                threading.Thread(target=self._draw_loop, name="dsh-attach-draw", daemon=True),
            ]
            for t in threads:
                t.start()
            self._key_loop()
        except DshError as e:
            self._finish(1, f"dsh-magics attach: {e.code}: {e.message}")
        finally:
            self._stop()
            self.tty.restore()
            self._signals.uninstall()
            for t in threads:
                t.join(timeout=5)
            for c in (self._events, self._keys, self._draw):
                if c is not None:
                    c.close()
        return self._outcome or Outcome(0, "")

    # ------------------------------------------------------------------
    def _finish(self, status: int, message: str) -> None:
        with self._cond:
            if self._outcome is None:
                self._outcome = Outcome(status, message)
        self._signals.wake()

    def _stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()
        if self._events is not None:
            self._events.close()

    def _mark_dirty(self) -> None:
        with self._cond:
            self._dirty = True
            self._cond.notify_all()

    # -- keys ------------------------------------------------------------
    def _key_loop(self) -> None:
        fd_in, sig_fd = self.tty.fd_in, self._signals.read_fd
        while self._outcome is None:
            try:
                ready = fdwait.readable([fd_in, sig_fd], None)
            except InterruptedError:
                continue
            if sig_fd in ready:
                self._on_signals(self._signals.take())
                continue
            if fd_in in ready:
                try:
                    data = os.read(fd_in, 65536)
                except OSError:
                    data = b""
                if not data:
                    self._finish(0, f"[the terminal closed; session {self.session} keeps running]")
                    return
                self._on_keys(data)

    def _on_signals(self, got: set[int]) -> None:
        if got & {signal.SIGTERM, signal.SIGHUP}:
            name = "SIGTERM" if signal.SIGTERM in got else "SIGHUP"
            self._finish(1, f"[{name}: detached from session {self.session}; it keeps running]")
            return
        if signal.SIGWINCH in got:
            with self._cond:
                self._live = False  # until the screen the resize brings
                self._resized = True
                self._dirty = True
                self._cond.notify_all()
            if not self.read_only:
                self._set_size()  # the host answers with a screen of the new size
            elif self._events is not None:
                self._events.rewatch(self.session)  # a screen to go live from, if it fits now

    def _on_keys(self, data: bytes) -> None:
        cut = data.find(self.detach_key)
        if cut >= 0:
            if not self.read_only and cut:
                self._type(data[:cut])
            self._finish(0, f"[detached from session {self.session} (host {self.host_name}); it keeps running]")
            return
        if self.read_only:
            return  # a viewer's keys change nothing (the host refuses them too)
        if self._screen_size is not None and self._screen_size != self.tty.size():
            self._set_size()  # the last to type sets the size
        while data:
            i = data.find(CTRL_C)
            if i < 0:
                self._type(data)
                return
            if i:
                self._type(data[:i])
            self._interrupt()
            data = data[i + 1 :]

    def _type(self, data: bytes) -> None:
        assert self._keys is not None
        text = data.decode("utf-8", "surrogateescape")
        for start in range(0, len(text), _CHUNK):
            piece = text[start : start + _CHUNK]
            for attempt in (1, 2):
                try:
                    self._keys.call("type_keys", {"session_id": self.session, "data": piece, "caller": self.caller})
                    break
                except SessionBusy:
                    if attempt == 2:  # another caller's job started between two looks
                        self._bell()
                except NotRunning:
                    self._bell()  # a remote terminal at rest: no person's prompt there
                    break
                except (NoSuchSession, ShellExited) as e:
                    self._finish(1, f"dsh-magics attach: {e.code}: {e.message}")
                    return

    def _interrupt(self) -> None:
        """Ctrl-C: what ``bash_interrupt`` does (SIGINT to the running job's group)."""
        assert self._keys is not None
        try:
            self._keys.call("interrupt", {"session_id": self.session, "source": "person", "caller": self.caller})
        except (NoSuchSession, ShellExited) as e:
            self._finish(1, f"dsh-magics attach: {e.code}: {e.message}")

    def _bell(self) -> None:
        try:
            write_all(self.tty.fd_out, b"\x07")
        except OSError:
            pass  # the terminal is gone: the key loop sees its end

    def _set_size(self) -> None:
        assert self._keys is not None
        cols, rows = self.tty.size()
        try:
            self._keys.call("resize", {"session_id": self.session, "cols": max(cols, 2), "rows": max(rows, 2)})
        except ShellExited:
            pass  # the shell exited: the next look at the session says so
        self._screen_size = (cols, rows)

    # -- events and drawing ------------------------------------------------
    def _follow_events(self) -> None:
        assert self._events is not None
        while True:
            event = self._events.next()
            if event is None:
                if not self._stopping:
                    self._finish(
                        1,
                        f"dsh-magics attach: {HostUnavailable.code}: the terminal host {self.host_name} "
                        "went away; session " + f"{self.session} is gone with it",
                    )
                return
            if event.get("session_id") != self.session:
                continue
            kind = event.get("type")
            if kind == "terminal" and event.get("status") == "closed":
                self._finish(0, f"[session {self.session} was closed]")
                return
            if kind == "screen" and isinstance(event.get("screen"), dict):
                self._on_screen(event["screen"])
            elif kind == "bytes":
                self._on_bytes(base64.b64decode(str(event.get("data") or "")))

    def _on_screen(self, screen: dict[str, Any]) -> None:
        """Paint the stream's screen in full; go live if the window fits it."""
        with self._cond:
            self._screen_size = (int(screen["cols"]), int(screen["rows"]))
            cols, rows = self.tty.size()
            self._live = self._screen_size == (cols, rows)
            if not self._live:
                self._dirty = True  # drawn from a fetched screen, cut or padded to the window
                self._cond.notify_all()
                return
            self._painter.invalidate()
            self._write(self._painter.frame(screen, cols, rows).encode("utf-8", "replace"))

    def _on_bytes(self, data: bytes) -> None:
        with self._cond:
            if self._live and self.tty.size() == self._screen_size:
                self._painter.invalidate()  # the window no longer holds the painter's last frame
                self._write(data)
                return
            self._live = False
            self._dirty = True
            self._cond.notify_all()

    def _write(self, data: bytes) -> None:
        """Write to the local terminal (``_cond`` held: one writer at a time)."""
        if self._stopping or not data:
            return
        try:
            write_all(self.tty.fd_out, data)
        except OSError:
            self._finish(1, "")

    def _draw_loop(self) -> None:
        assert self._draw is not None
        last = 0.0
        while True:
            with self._cond:
                while not self._stopping:
                    if self._dirty:
                        early = last + FRAME_S - time.monotonic()
                        if early <= 0:
                            break
                        self._cond.wait(early)
                    else:
                        self._cond.wait()
                if self._stopping:
                    return
                self._dirty = False
                if self._resized:
                    self._resized = False
                    self._painter.invalidate()
            last = time.monotonic()
            cols, rows = self.tty.size()
            # The emulator's own rows when they fit (a tenth of the cost), else runs to cut.
            narrow = self._screen_size is not None and cols < self._screen_size[0]
            try:
                screen = self._draw.call(
                    "screen", {"session_id": self.session, "styles": True if narrow else None, "vt": None if narrow else True}
                )
            except (NoSuchSession, HostUnavailable):
                continue  # the event thread reports the end
            except DshError:  # no screen now (its shell exited): the next event draws again
                continue
            self._screen_size = (int(screen["cols"]), int(screen["rows"]))
            if screen.get("vt") is not None and cols < self._screen_size[0]:
                self._mark_dirty()  # it got narrower than we thought: draw again with runs
                continue
            with self._cond:
                if self._stopping:
                    return
                if self._live:
                    continue  # the stream took over meanwhile: this screen may be older than its bytes
                self._write(self._painter.frame(screen, cols, rows).encode("utf-8", "replace"))


__all__ = ["DEFAULT_DETACH", "Attacher", "Outcome", "parse_detach_key"]
