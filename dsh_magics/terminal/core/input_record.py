"""Who typed what into one terminal: commands and input, each with its source.

One bounded record per terminal. It is fed with what the engine has already
checked and redacted (a job's :class:`~dsh_magics.terminal.interaction.InputRecord`,
a command's text), so secret input only ever arrives here as ``[secret]``.

Input reaches it from the one write path: every write to a terminal
(:meth:`.pty.Pty.write`) says what it is, the engine's own line (``typed=None``:
job lines, probes, set-up) or input typed on somebody's behalf (a
:class:`Typed`), and a :class:`Typed` is recorded by that write, after its
bytes went out, in the order written. A :class:`Typed` cannot hold secret text
(its record must be redacted). Commands and interrupts are recorded by the
registry: a command's bytes on the terminal are the engine's job line, and a
local Ctrl-C is a signal, not a byte (docs/attach.md, "Who typed what").
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..interaction import InputRecord

#: What a secret input's text is everywhere (interaction.REDACTED).
SECRET_TEXT = "[secret]"

#: Entries kept per terminal (the oldest go first).
MAX_ENTRIES = 2000

#: Longest text kept for one entry (a pasted file is not a record).
MAX_TEXT = 500


@dataclass(frozen=True)
class Entry:
    """One thing written to the terminal on somebody's behalf.

    ``kind``: ``command`` (a job's command line), ``input`` (text or keys
    typed into a running job), ``interrupt`` (Ctrl-C). ``source`` is
    ``person``, ``agent``, ``notebook`` or ``panel`` (None: the caller did
    not say); ``caller`` names the client where known (an MCP client, an
    attach client)."""

    seq: int
    at: float
    kind: str
    source: str | None
    caller: str | None
    text: str
    secret: bool = False
    key: str | None = None
    job_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Typed:
    """Input written to a terminal on somebody's behalf, as
    :meth:`.pty.Pty.write` records it: ``record`` (already checked and
    redacted) goes to the job's inputs (``keep``) just before the bytes, so a
    job that ends on them has it in its result, and once they are written,
    as an ``input`` event, to the terminal's record (``tell``: the terminal's
    ``emit``; the registry adds it to the :class:`InputLog`). Both under the
    write lock: the order of the records is the order written.

    A plain class with slots, not a frozen dataclass: one is made for every
    key an attached person types, and a frozen dataclass's ``__init__`` sets
    each field through ``object.__setattr__`` and calls ``__post_init__``
    (benchmarks/README.md, bench_attach session 36 round 2)."""

    __slots__ = ("session_id", "job_id", "record", "keep", "tell")

    def __init__(
        self,
        session_id: str,
        job_id: str,
        record: InputRecord,
        keep: Callable[[InputRecord], None],
        tell: Callable[[dict[str, Any]], None],
    ) -> None:
        if record.secret and record.text != SECRET_TEXT:
            raise ValueError("a secret input's record must be redacted before it is written")
        self.session_id = session_id
        self.job_id = job_id
        self.record = record
        self.keep = keep
        self.tell = tell

    def writing(self) -> None:
        self.keep(self.record)

    def written(self) -> None:
        self.tell({"type": "input", "session_id": self.session_id, "job_id": self.job_id, "input": self.record.to_dict()})


class InputLog:
    """The record of one terminal (thread-safe; engine threads add to it)."""

    def __init__(self, limit: int = MAX_ENTRIES) -> None:
        self._entries: deque[Entry] = deque(maxlen=limit)
        self._lock = threading.Lock()
        self._seq = 0

    def add(
        self,
        kind: str,
        source: str | None,
        text: str,
        *,
        caller: str | None = None,
        secret: bool = False,
        key: str | None = None,
        job_id: str | None = None,
        at: float | None = None,
    ) -> Entry:
        with self._lock:
            self._seq += 1
            entry = Entry(
                seq=self._seq,
                at=time.time() if at is None else at,
                kind=kind,
                source=source,
                caller=caller,
                text=SECRET_TEXT if secret else text[:MAX_TEXT],
                secret=secret,
                key=key,
                job_id=job_id,
            )
            self._entries.append(entry)
            return entry

    def add_input(self, record: dict[str, Any], job_id: str | None) -> Entry:
        """A job's input record (``InputRecord.to_dict()``, already redacted).
        A person's keys come a few at a time: consecutive raw text from the
        same source into the same job joins one entry (a secret one stays
        ``[secret]``)."""
        source, caller = record.get("source"), record.get("caller")
        secret, key = bool(record.get("secret")), record.get("key")
        text = str(record.get("text") or "")
        with self._lock:
            last = self._entries[-1] if self._entries else None
            if (
                last is not None
                and key is None
                and not record.get("enter", True)
                and last.kind == "input"
                and last.key is None
                and (last.source, last.caller, last.job_id) == (source, caller, job_id)
                and last.secret == secret
                and len(last.text) < MAX_TEXT
            ):
                joined = last.text if secret else (last.text + text)[:MAX_TEXT]
                self._entries[-1] = Entry(
                    last.seq, last.at, "input", source, caller, joined, secret, None, job_id
                )
                return self._entries[-1]
        return self.add(
            "input",
            record.get("source"),
            str(record.get("text") or ""),
            caller=record.get("caller"),
            secret=bool(record.get("secret")),
            key=record.get("key"),
            job_id=job_id,
            at=record.get("at"),
        )

    def entries(self, last: int | None = None) -> list[Entry]:
        with self._lock:
            out = list(self._entries)
        return out if last is None else out[max(0, len(out) - last) :] if last else []

    def latest(self) -> Entry | None:
        with self._lock:
            return self._entries[-1] if self._entries else None


__all__ = ["Entry", "InputLog", "MAX_ENTRIES", "SECRET_TEXT", "Typed"]
