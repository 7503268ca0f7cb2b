"""How an attach ends: its exit status and the one line said once the person's
terminal is back (docs/attach.md, "Ways out").

Every way out of the attach loop (attach/client.py) and of the host reading the
keys (host/tty_in.py's ``keys`` events) is one method of :class:`Said`, so the
docs' table and the code are one list (tests/attach/test_outcomes.py checks it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import DshError, HostUnavailable


@dataclass
class Outcome:
    """How the attach ended: exit status and the line said after the terminal is back."""

    status: int
    message: str


class Said:
    """The lines of one attach, to ``session`` of the host named ``host``."""

    def __init__(self, session: str, host: str) -> None:
        self.session = session
        self.host = host

    def detached(self) -> Outcome:
        return Outcome(0, f"[detached from session {self.session} (host {self.host}); it keeps running]")

    def session_closed(self) -> Outcome:
        return Outcome(0, f"[session {self.session} was closed]")

    def terminal_closed(self) -> Outcome:
        """The local terminal's input ended."""
        return Outcome(0, f"[the terminal closed; session {self.session} keeps running]")

    def host_gone(self) -> Outcome:
        return Outcome(
            1,
            f"dsh-magics attach: {HostUnavailable.code}: the terminal host {self.host} "
            f"went away; session {self.session} is gone with it",
        )

    def signalled(self, name: str) -> Outcome:
        """SIGTERM or SIGHUP to the client."""
        return Outcome(1, f"[{name}: detached from session {self.session}; it keeps running]")

    def error(self, e: DshError) -> Outcome:
        return Outcome(1, f"dsh-magics attach: {e.code}: {e.message}")

    @staticmethod
    def unwritable() -> Outcome:
        """The local terminal cannot be written (gone): nothing can be said there."""
        return Outcome(1, "")

    def keys_event(self, event: dict[str, Any]) -> Outcome | None:
        """What the host reading the keys told the client (host/tty_in.py);
        None: ring the bell."""
        what, error = event.get("what"), event.get("error") or {}
        if what == "detach":
            return self.detached()
        if what == "closed":
            return self.terminal_closed()
        if what == "bell":
            return None
        return Outcome(1, f"dsh-magics attach: {error.get('code')}: {error.get('message')}")


__all__ = ["Outcome", "Said"]
