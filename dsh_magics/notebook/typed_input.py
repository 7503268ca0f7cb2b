"""What the magics type for the person: ``--expand``'s Python values, ``--secret``'s
hidden entry, and the record of keys sent to a job that a following wait honours.
"""

from __future__ import annotations

import getpass
from typing import Any

from IPython.utils.text import FullEvalFormatter

from ..errors import InvalidArgument, NotRunning
from ..terminal import Result
from ..terminal.api import Engine

# How long a %bash_wait right after %bash_send lets the program act on the
# keys before an input wait already reported by the send ends the wait.
SEND_SETTLE_MS = 2000
# Sends never waited for are forgotten beyond this many (the newest are kept).
KEEP_SENDS = 64


def expand(command: str, user_ns: dict[str, Any]) -> str:
    """``{expr}`` with Python values from the user's namespace, by the
    formatter IPython's ``!`` and ``var_expand`` use for braces; ``$`` is
    left alone. Unlike ``!``, a brace that does not evaluate is an error,
    not text silently passed on to bash."""
    try:
        return FullEvalFormatter().vformat(command, args=(), kwargs=user_ns)
    except Exception as e:  # noqa: BLE001 - any error of the user's expression
        raise InvalidArgument(
            f"--expand: {type(e).__name__}: {e} (write {{{{ and }}}} for a literal brace)"
        ) from None


def ask_hidden(registry: Engine, session: str) -> str:
    """The text for ``--secret``: the kernel's stdin request with hidden
    entry (ipykernel routes ``getpass`` there), never echoed or kept."""
    info = registry.info(session)
    if info.job_id is None:
        raise NotRunning(f"session {session!r} runs no job: nothing asks for a secret")
    prompt = (info.awaiting_input or {}).get("prompt") or "hidden input: "
    try:
        return getpass.getpass(prompt)
    except Exception as e:  # StdinNotImplementedError: a frontend without stdin
        if type(e).__name__ == "StdinNotImplementedError":
            raise InvalidArgument(
                "this frontend cannot ask for hidden input (no stdin); use the panel's "
                "password box"
            ) from None
        raise


class SentKeys:
    """Jobs that read input again right after ``%bash_send``: job id -> the
    session's output counter then. A following ``%bash_wait`` gives such a job
    ``SEND_SETTLE_MS`` to print or end before its input wait ends the wait."""

    def __init__(self) -> None:
        self._sent: dict[str, int] = {}

    def record(self, registry: Engine, session: str, res: Result) -> None:
        if not res.done and res.awaiting_input is not None:
            # It reads again, maybe still acting on these keys.
            self._sent[res.job_id] = registry.output_seq(session)
            while len(self._sent) > KEEP_SENDS:
                self._sent.pop(next(iter(self._sent)))
        else:
            self._sent.pop(res.job_id, None)

    def after_send(self, job_id: str) -> tuple[int, int] | None:
        """The (output counter, settle milliseconds) for a wait on ``job_id``, once."""
        seq = self._sent.pop(job_id, None)
        return None if seq is None else (seq, SEND_SETTLE_MS)
