"""An attached person's keys on the wire: one ``type_keys`` request line per read
of their terminal, put together from a prefix made once (:func:`line_prefix`),
and taken apart by the host as one connection's :class:`KeysLane`.

Every key a person types at ``dsh-magics attach`` is such a line, and the time
from the key to its echo is what they feel (benchmarks/README.md,
``bench_attach.py``). The first keys line of a connection goes through the
general dispatch like any request (host/requests.py: the JSON, the row's
checks, the read-only check, the interest note); it leaves the connection a
:class:`KeysLane`: that line's bytes up to its data, and the engine's keyboard
for its session and caller (terminal/person_keys.py), made once. A later line
that starts with the same bytes is the same request but for its data: the
lane reads the data (one JSON string) and hands it to that keyboard, which
checks it. Any other line, or one the lane cannot read, goes the general way.
A ``hello`` on the connection drops the lane (its client, read-only or not,
may have changed).

(Session 33 removed an earlier short path that parsed every keys line with a
copy of the row's checks: in a loop in-process it saved 3 us of 21. What a key
costs where it is felt is the number of Python calls on its way, each about a
microsecond on a loaded machine: benchmarks/README.md, session 35.)
"""

from __future__ import annotations

from json.decoder import scanstring  # type: ignore[attr-defined]  # the decoder's own, untyped in the stubs
from typing import TYPE_CHECKING

from . import protocol as P

if TYPE_CHECKING:  # the attach client imports this module for line_prefix, not the engine
    from ..terminal.person_keys import PersonKeys

#: The request's id: its errors name the operation (attach/link.py ``Pipe``).
KEYS_ID = "k:type_keys"

#: How every such line starts, up to its arguments.
HEAD = P.encode({"v": P.VERSION, "id": KEYS_ID, "op": "type_keys", "reply": P.ERRORS_ONLY, "args": {}})[: -len(b"{}}\n")]


def line_prefix(session_id: str, caller: str | None) -> bytes:
    """A line of the keys for ``session_id`` up to its data: append the data
    as a JSON string and ``}}\\n``."""
    line = P.encode({"v": P.VERSION, "id": KEYS_ID, "op": "type_keys", "reply": P.ERRORS_ONLY,
                     "args": {"session_id": session_id, "caller": caller, "data": ""}})  # fmt: skip
    assert line.startswith(HEAD)
    return line[: -len(b'""}}\n')]


class KeysLane:
    """One connection's keys lines for one session and caller, after one of
    them passed the general dispatch; ``keys`` is the engine's keyboard for
    them (``Registry.person_keys``: its ``type(data)``)."""

    def __init__(self, session_id: str, caller: str | None, keys: PersonKeys) -> None:
        self.session_id = session_id
        self.caller = caller
        self.keys = keys
        self._head = line_prefix(session_id, caller) + b'"'  # up to the data's first character
        self._start = len(self._head)

    def data(self, line: bytes) -> str | None:
        """The data of a keys line of this lane's shape (without its newline),
        None for any other line."""
        if not line.startswith(self._head):
            return None
        try:
            text = line.decode("utf-8")
            data, end = scanstring(text, self._start)  # the JSON string, as json.loads reads it
        except ValueError:  # not UTF-8, or not a JSON string: the general way says what is wrong
            return None
        if text[end:] != "}}":
            return None
        return data  # type: ignore[no-any-return]


__all__ = ["HEAD", "KEYS_ID", "KeysLane", "line_prefix"]
