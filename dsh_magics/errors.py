"""One error hierarchy with stable machine codes.

Each error has a ``code`` that never changes between releases and a message written for people.
"""

from __future__ import annotations

from typing import Any


class DshError(Exception):
    """Base class: ``code`` is the stable identifier, ``message`` the human text."""

    code: str = "ERROR"

    def __init__(self, message: str, *, code: str | None = None, **details: Any) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.details = details

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape shared by tools and the host: ``{"code", "message"}``."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            out["details"] = self.details
        return out

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class SessionBusy(DshError):
    code = "SESSION_BUSY"


class NoSuchSession(DshError):
    code = "NO_SUCH_SESSION"


class NoSuchJob(DshError):
    code = "NO_SUCH_JOB"


class TooManySessions(DshError):
    code = "TOO_MANY_SESSIONS"


class InvalidArgument(DshError):
    code = "INVALID_ARGUMENT"


class ShellExited(DshError):
    code = "SHELL_EXITED"


class TargetUnreachable(DshError):
    """A remote terminal's target could not be reached (ssh refused, host key, auth)."""

    code = "TARGET_UNREACHABLE"


class TargetLost(DshError):
    """A remote terminal's connection or shell died while a job ran there
    (a member of a group reports it; docs/fanout.md)."""

    code = "TARGET_LOST"


class NotRunning(DshError):
    """Input was sent to a terminal whose shell runs no job: typed text would
    become a command of the shell itself, so it is refused."""

    code = "NOT_RUNNING"


class SecretInput(DshError):
    """An agent tried to type while the job asks for hidden entry (a password):
    secrets go to a person, never through a model."""

    code = "SECRET_INPUT"


class ShellUnsupported(DshError):
    """The configured shell is not a bash the engine can drive (too old)."""

    code = "SHELL_UNSUPPORTED"


class NoSpace(DshError):
    """A file the engine needs (a job's command file, a terminal's start-up
    script) cannot be written: the disk holding it is full. Nothing was
    started; the terminal and its running job are untouched."""

    code = "NO_SPACE"


class UnknownTool(DshError):
    code = "UNKNOWN_TOOL"


class HostUnavailable(DshError):
    code = "HOST_UNAVAILABLE"


class BridgeUnavailable(DshError):
    """The live Node bridge cannot run (no node/npm, no registry, boot failure)."""

    code = "BRIDGE_UNAVAILABLE"


ERROR_CODES: tuple[str, ...] = (
    "SESSION_BUSY",
    "NO_SUCH_SESSION",
    "NO_SUCH_JOB",
    "TOO_MANY_SESSIONS",
    "INVALID_ARGUMENT",
    "SHELL_EXITED",
    "TARGET_UNREACHABLE",
    "TARGET_LOST",
    "SHELL_UNSUPPORTED",
    "NOT_RUNNING",
    "SECRET_INPUT",
    "UNKNOWN_TOOL",
    "HOST_UNAVAILABLE",
    "NO_SPACE",
    "BRIDGE_UNAVAILABLE",
)
