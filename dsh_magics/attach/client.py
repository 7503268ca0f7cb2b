"""The attach loop: keys from the local terminal to the session, screens back.

One loop on the main thread waits on the keyboard, the signal pipe and the two connections that
matter for a key's echo: keys go out on one (written without waiting for their replies, which
are read when they come: errors ring the bell or end the attach), and the session's live stream
(host/stream.py) comes in on the other and is written to the local terminal in the same loop, so
a key and its echo cross no thread. A draw thread fetches the screen and paints what differs
when the stream's bytes cannot be written as they are.

**Live and drawn.** The stream starts with the terminal's screen, painted in full. While the
local window has the terminal's size, the stream's bytes are written to it as they come (a key's
echo is one hop from the terminal's reader): the local terminal then shows what the terminal's
emulator shows. The host sends a screen instead of bytes after a resize, at an alternate screen
switch and when this client falls behind; each is painted in full and the bytes go on from
there. In a window of another size (a read-only viewer, or one whose size another viewer set)
bytes only say "changed": the draw thread fetches the screen and paints it, at most
:data:`FRAME_S` apart. Every way out (detach key, the session closed, the host gone,
SIGTERM/SIGHUP, an error) goes through :meth:`Attacher.run`'s ``finally``, which puts the local
terminal back.

**A handed terminal** (attach/handover.py): the host writes the live bytes and reads the
keys itself; this client paints only while the host holds its writes (``_direct`` false).
SIGTSTP gives it back and hands it over again when continued (``handover.suspend``).
"""

from __future__ import annotations

import base64
import os
import select
import signal
import threading
import time
import uuid
from json.encoder import encode_basestring_ascii  # type: ignore[attr-defined]
from typing import Any

from ..errors import DshError, HostUnavailable, NoSuchSession, NotRunning, SessionBusy, ShellExited
from ..host import protocol as P
from ..host.bells import Bells
from ..host.keys import KeyLines
from ..host.runtime import HostPaths
from . import handover, render
from .link import Conn, Pipe
from .local_tty import RawTerminal, Signals, write_all
from .outcomes import Outcome, Said

#: Least time between two screen fetches while output keeps coming (60 a second): each fetch holds
#: the terminal's lock for a moment, and a faster redraw than the eye follows only slows the job
#: down. A change after a quiet moment is fetched at once.
FRAME_S = 1 / 60

#: Keys are sent in pieces of at most this many characters (a paste).
_CHUNK = 16 * 1024

#: Keys in flight before the keyboard is read again: requests not yet answered, and bytes the
#: socket has not taken (a big paste into a job that does not read it waits in the terminal).
_MAX_PENDING = 64
_MAX_UNSENT = 256 * 1024

#: How long leaving waits for the keys already sent to be answered (they are typed in order;
#: closing before would drop the ones not yet read).
_DRAIN_S = 5.0

CTRL_C = b"\x03"

#: A string as a JSON string (the C encoder ``json.dumps`` ends in, without its Python layers).
_json_str = encode_basestring_ascii


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
        self._said = Said(session, host_name)
        self._client = {"pid": os.getpid(), "purpose": "attach", "session": session, "read_only": read_only,
                        "caller": self.caller}  # fmt: skip
        self._keys: Pipe | None = None
        self._draw: Conn | None = None
        self._events: Pipe | None = None
        self._signals = Signals()
        self._lock = threading.RLock()  # _cond's, taken as itself for every echo (_on_events)
        self._cond = threading.Condition(self._lock)
        self._dirty = False  # the stream's first screen draws the first frame
        self._painted = False  # the window holds the painter's last frame (no bytes since)
        self._live = False  # writing the stream's bytes as they come (module docstring)
        self._handed = False  # the host has this terminal (attach/handover.py)
        self._keys_handed = False  # ... and reads its keys (host/tty_in.py)
        self._typing: list[int] = []  # the loop's wait while typing (changed in place)
        self._rehand: list[int] = []  # the terminal for the host, at watch's "send" (handover.suspend)
        self._direct = False  # ... and writes the stream to it now: paint nothing
        self._resized = False
        self._outcome: Outcome | None = None
        self._stopping = False
        self._screen_size: tuple[int, int] | None = None
        self._painter = render.Painter()
        self._bells = Bells()  # the output's bells, for a window drawn from screens
        self._key_lines = KeyLines(session, self.caller)  # every keys line, a short key's kept

    # ------------------------------------------------------------------
    def open(self) -> dict[str, Any]:
        """Connect and check the session before the terminal is touched."""
        keys = Conn(self.paths, self._client)
        self._keys = Pipe(keys, blocking=True)
        info = keys.call("info", {"session_id": self.session})
        if info.get("status") == "dead":
            raise ShellExited(
                f"session {self.session!r} in host {self.host_name}: its shell has exited; "
                "nothing to attach to (its next command starts a fresh shell)",
                session_id=self.session,
            )
        if not self.read_only:
            self._set_size(keys)  # before the stream starts: its first screen has the window's size
        self._draw = Conn(self.paths, self._client)
        self._events, handed = handover.stream(Conn(self.paths, self._client), self.session, self.tty, self.caller,
                                               self.detach_key)  # fmt: skip
        self._handed = self.tty.cancel = handed > 0
        self._keys_handed = handed == 2
        return info  # type: ignore[no-any-return]

    def run(self) -> Outcome:
        """Attach until detached or ended; the local terminal is restored on every path."""
        if self._keys is None:
            self.open()
        assert self._keys is not None
        self._keys.start()
        draw = threading.Thread(target=self._draw_loop, name="dsh-attach-draw", daemon=True)
        self._signals.install()
        try:
            self.tty.enter()
            if self._screen_size is not None and self.tty.size() != self._screen_size:
                # The window changed between the size sent on connecting and the
                # handler's install: that SIGWINCH went by unseen (pinned by
                # tests/attach/test_attach.py::test_resizing_tmux_changes_stty_size).
                self._on_signals({signal.SIGWINCH})
            draw.start()
            self._loop()
        except DshError as e:
            self._finish(self._said.error(e))
        except OSError:  # a connection broke while writing to it
            self._host_gone()
        finally:
            self._stop()
            if self._handed and self._events is not None:
                handover.give_back(self._events, self.session)  # before the client's own last writes
            self.tty.restore()
            self._signals.uninstall()
            if draw.is_alive():
                draw.join(timeout=5)
            for c in (self._events, self._keys, self._draw):
                if c is not None:
                    c.close()
        return self._outcome or Outcome(0, "")

    # ------------------------------------------------------------------
    def _finish(self, outcome: Outcome) -> None:
        with self._cond:
            if self._outcome is None:
                self._outcome = outcome
        self._signals.wake()

    def _host_gone(self) -> None:
        self._finish(self._said.host_gone())

    def _stop(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify_all()

    def _mark_dirty(self) -> None:
        with self._cond:
            self._dirty = True
            self._cond.notify_all()

    # -- the loop ----------------------------------------------------------
    def _loop(self) -> None:
        """Until an outcome: the stream's events first, then keys, replies, signals.
        (``select``: a handful of low descriptors, and macOS's ``poll`` takes no tty.)"""
        keys, events = self._keys, self._events
        assert keys is not None and events is not None
        fd_in, sig_fd, ev_fd, key_fd = self.tty.fd_in, self._signals.read_fd, events.fileno(), keys.fileno()
        # select's lists made once and Pipe.out looked at directly: no Python call between
        # a key sent and the next wait (each costs microseconds here: README, session 36).
        full, keys_w = [ev_fd, key_fd, sig_fd], [key_fd]  # (no fd_in: the host reads the keys, host/tty_in.py)
        typing = self._typing = [*full] if self._keys_handed else [*full, fd_in]
        none: list[int] = []
        unsent, pending, known = keys.out, keys.pending, self._key_lines.lines
        while self._outcome is None:
            left = len(unsent)
            want = typing if len(pending) < _MAX_PENDING and left < _MAX_UNSENT else full
            try:
                ready, writable, _ = select.select(want, keys_w if left else none, none, None)
            except InterruptedError:
                continue
            if ev_fd in ready and not self._on_events(events.read()):
                return
            if fd_in in ready:
                try:
                    data = os.read(fd_in, 65536)
                except OSError:
                    data = b""
                if not data:
                    self._finish(self._said.terminal_closed())
                    return
                line = known.get(data) if self._live else None  # a key sent before (so checked below)
                if line is not None:
                    keys.send_line(line)
                elif self._live and self.detach_key not in data and CTRL_C not in data and len(data) <= _CHUNK:
                    # The usual key: straight out (live: no resize goes first). Every key's path.
                    keys.send_line(self._key_lines.line(data))
                else:
                    self._on_keys(data)
            if writable:
                keys.flush()
            if key_fd in ready:
                self._on_replies(keys.read())
            if sig_fd in ready:
                self._on_signals(self._signals.take())

    def _drain(self) -> None:
        """Until the keys sent have been typed (the reply to a request after
        them says so): leaving closes the connection, and the host would drop
        what it has not read yet."""
        assert self._keys is not None
        self._keys.send("exists", {"session_id": self.session})
        self._keys.wait_replies(self._on_replies, lambda: self._outcome is not None, _DRAIN_S)

    def _on_events(self, msgs: list[Any] | None) -> bool:
        """The stream's events; False once it ended (the host went away, or the session closed).

        The stream's bytes (``Pipe.bytes_prefix``) are written in this call: every echo
        comes this way, where each Python call costs microseconds (README, session 36)."""
        if msgs is None:
            if self._outcome is None:
                self._host_gone()
            return False
        for msg in msgs:
            data = msg if type(msg) is bytes else self._on_event(msg)
            if data is None:
                if self._outcome is not None:  # the stream ended (_on_event said why)
                    return False
                continue
            with self._lock:  # _cond's
                # Live, and no resize since: the window is the terminal's size (a
                # resize's SIGWINCH is noted by its handler before this runs, on
                # this thread; the loop then stops going live until the new
                # screen). No ioctl to ask the size.
                if self._live and signal.SIGWINCH not in self._signals.pending:
                    if self._painted:  # the window no longer holds the painter's last frame
                        self._painter.invalidate()
                        self._painted = False
                    if not self._stopping:
                        try:
                            n = os.write(self.tty.fd_out, data)
                            if n < len(data):
                                write_all(self.tty.fd_out, data[n:])
                        except InterruptedError:
                            write_all(self.tty.fd_out, data)
                        except OSError:
                            self._finish(Said.unwritable())
                    continue
                self._live = False
                self._dirty = True
                if self._bells.rings(data):  # a screen has no bell: the window rings it here
                    self._write(b"\x07")
                self._cond.notify_all()
        return True

    def _on_event(self, msg: dict[str, Any]) -> bytes | None:
        """One event or reply (not the stream's bytes): a JSON ``bytes``
        event's data, else None (with an outcome once the stream ended)."""
        event = msg.get("event")
        if not isinstance(event, dict):
            if self._rehand and msg.get("op") == "watch" and self._events is not None:
                self._rehand = handover.send_held(self._events, self._rehand, msg.get("value"))
            if msg.get("ok") is False and msg.get("op") == "watch":
                self._finish(self._said.error(P.error_from_wire(msg.get("error"))))
            return None  # the replies to subscribe and watch (or the watch's failure)
        if event.get("session_id") != self.session:
            return None
        kind = event.get("type")
        if kind == "bytes":
            return base64.b64decode(str(event.get("data") or ""))
        if kind == "screen" and isinstance(event.get("screen"), dict):
            self._on_screen(event["screen"], event.get("tty"))
        elif kind == "terminal" and event.get("status") == "closed":
            self._finish(self._said.session_closed())
        elif kind == "tty":  # what the host took when handed the terminal again (handover.suspend)
            self._handed, self._keys_handed = event.get("took") in (1, 2), event.get("took") == 2
            self._typing[:] = self._typing[:3] if self._keys_handed else self._typing
        elif kind == "keys":  # from the host reading the keys (host/tty_in.py)
            said = self._said.keys_event(event)
            self._bell() if said is None else self._finish(said)
        return None

    def _on_replies(self, msgs: list[dict[str, Any]] | None) -> None:
        """Answers to keys, interrupts and resizes: an error rings the bell
        (the key went nowhere) or ends the attach (the session is gone)."""
        if msgs is None:
            if self._outcome is None:
                self._host_gone()
            return
        for msg in msgs:
            if msg.get("ok") is not False:
                continue
            e = P.error_from_wire(msg.get("error"))
            op = msg.get("op")
            if isinstance(e, (NoSuchSession, ShellExited)) and op != "resize":
                self._finish(self._said.error(e))
            elif isinstance(e, (NotRunning, SessionBusy)):
                self._bell()  # a remote terminal at rest (no person's prompt there), or another caller's job
            elif not isinstance(e, ShellExited):  # a resize of an exited shell: the next look says so
                self._finish(self._said.error(e))

    def _on_signals(self, got: set[int]) -> None:
        if got & {signal.SIGTERM, signal.SIGHUP}:
            name = "SIGTERM" if signal.SIGTERM in got else "SIGHUP"
            self._finish(self._said.signalled(name))
            return
        if signal.SIGTSTP in got:  # (_cond held: the draw thread paints nothing meanwhile)
            with self._cond:
                self._rehand = handover.suspend(self._events, self.session, self.tty, self._handed, self.caller, self.detach_key)
                self._handed = self._keys_handed = self._direct = self._live = False
                self._typing[:] = [*self._typing[:3], self.tty.fd_in]  # the client reads its keys until "tty"
        if signal.SIGWINCH in got:
            with self._cond:
                self._live = False  # until the screen the resize brings
                self._resized = True
                self._dirty = True
                self._cond.notify_all()
            if not self.read_only:
                self._set_size()  # the host answers with a screen of the new size
            elif self._events is not None:
                self._events.send("watch", {"session_id": self.session})  # a screen to go live from, if it fits now

    # -- keys ------------------------------------------------------------
    def _on_keys(self, data: bytes) -> None:
        cut = data.find(self.detach_key)
        if cut >= 0:
            if not self.read_only:
                if cut:
                    self._type(data[:cut])
                self._drain()
            self._finish(self._said.detached())
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
        """Send the keys; the host types them in order and answers only if
        they fail. The request line is put together from a prefix made once:
        this is on the path of every key's echo."""
        assert self._keys is not None
        text = data.decode("utf-8", "surrogateescape")
        for start in range(0, len(text), _CHUNK):
            self._keys.send_line(self._key_lines.prefix + _json_str(text[start : start + _CHUNK]).encode("ascii") + b"}}\n")

    def _interrupt(self) -> None:
        """Ctrl-C: what ``bash_interrupt`` does (SIGINT to the running job's group)."""
        assert self._keys is not None
        self._keys.send("interrupt", {"session_id": self.session, "source": "person", "caller": self.caller})

    def _bell(self) -> None:
        if self._direct and self._events is not None:  # the host writes to the terminal: in order with it
            self._events.send("tty_bell", {"session_id": self.session}, errors_only=True)
            return
        try:
            write_all(self.tty.fd_out, b"\x07")
        except OSError:
            pass  # the terminal is gone: the loop sees its end

    def _set_size(self, conn: Conn | None = None) -> None:
        """The window's size to the terminal: through ``conn`` and waited for
        (before the stream starts), else sent like a key."""
        cols, rows = self.tty.size()
        args = {"session_id": self.session, "cols": max(cols, 2), "rows": max(rows, 2)}
        if conn is not None:
            try:
                conn.call("resize", args)
            except ShellExited:
                pass  # the shell exited: the next look at the session says so
        else:
            assert self._keys is not None
            self._keys.send("resize", args)
        self._screen_size = (cols, rows)

    # -- the stream and drawing ----------------------------------------------
    def _on_screen(self, screen: dict[str, Any], tty_no: Any = None) -> None:
        """Paint the stream's screen in full; go live if the window fits it, and
        say which if the host holds its writes for this screen (``tty_no``)."""
        with self._cond:
            self._direct = False
            self._bells.reset()  # the bytes after a screen start afresh (none were parsed while live)
            self._screen_size = (int(screen["cols"]), int(screen["rows"]))
            cols, rows = self.tty.size()
            self._live = self._screen_size == (cols, rows)
            if self._handed:
                self._painter.invalidate()  # the host wrote since the last frame
            if not self._live:
                self._dirty = True  # drawn from a fetched screen, cut or padded to the window
                self._cond.notify_all()
            else:
                self._painter.invalidate()
                frame = self._painter.frame(screen, cols, rows).encode("utf-8", "replace")
                self._write(handover.CANCEL + frame if self._handed else frame)
                self._painted = True
            if isinstance(tty_no, int) and self._events is not None:
                self._events.send("tty_go", {"session_id": self.session, "screen": tty_no, "live": self._live},
                                  errors_only=True)  # fmt: skip
                self._direct = self._live

    def _write(self, data: bytes) -> None:
        """Write to the local terminal (``_cond`` held: one writer at a time)."""
        if self._stopping or not data:
            return
        try:
            write_all(self.tty.fd_out, data)
        except OSError:
            self._finish(Said.unwritable())

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
                if self._live or self._direct:
                    continue  # the stream took over meanwhile: this screen may be older than its bytes
                self._write(self._painter.frame(screen, cols, rows).encode("utf-8", "replace"))
                self._painted = True


__all__ = ["Attacher", "Outcome"]
