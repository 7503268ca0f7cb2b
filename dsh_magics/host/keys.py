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
from json.encoder import encode_basestring_ascii as _json_str  # type: ignore[attr-defined]  # the C encoder
from typing import TYPE_CHECKING

from . import protocol as P

if TYPE_CHECKING:  # the attach client imports this module for line_prefix, not the engine
    from ..terminal.person_keys import PersonKeys

#: The request's id: its errors name the operation (attach/link.py ``Pipe``).
KEYS_ID = "k:type_keys"

#: How every such line starts, up to its arguments.
HEAD = P.encode({"v": P.VERSION, "id": KEYS_ID, "op": "type_keys", "reply": P.ERRORS_ONLY, "args": {}})[: -len(b"{}}\n")]


#: A key read of at most this many characters (one key, an arrow's escape
#: sequence) has its line kept by both ends: :class:`KeysLane` and
#: :class:`KeyLines`, at most :data:`SEEN_LINES` each.
SHORT_KEY = 4
SEEN_LINES = 256


def line_prefix(session_id: str, caller: str | None) -> bytes:
    """A line of the keys for ``session_id`` up to its data: append the data
    as a JSON string and ``}}\\n``."""
    line = P.encode({"v": P.VERSION, "id": KEYS_ID, "op": "type_keys", "reply": P.ERRORS_ONLY,
                     "args": {"session_id": session_id, "caller": caller, "data": ""}})  # fmt: skip
    assert line.startswith(HEAD)
    return line[: -len(b'""}}\n')]


class KeyLines:
    """The attach client's keys lines for one session and caller: a line is
    the prefix made once (:func:`line_prefix`), the data as a JSON string and
    ``}}``; the line of a short key read is kept, so the key typed again is
    one dictionary look-up on its way (``lines.get(data)``, before
    :meth:`line`). Pinned by tests/attach/test_keys.py::test_a_short_keys_line_is_kept_by_both_ends."""

    def __init__(self, session_id: str, caller: str | None) -> None:
        self.prefix = line_prefix(session_id, caller)  # up to the data
        self.lines: dict[bytes, bytes] = {}

    def line(self, data: bytes) -> bytes:
        """The request line that types ``data`` (bytes a terminal sent)."""
        line = self.prefix + _json_str(data.decode("utf-8", "surrogateescape")).encode("ascii") + b"}}\n"
        if len(data) <= SHORT_KEY and len(self.lines) < SEEN_LINES:
            self.lines[data] = line
        return line


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
        #: Lines of one short key read before, and their data: a person types the
        #: same few keys again and again, and this is on the way of every key.
        self._seen: dict[bytes, str] = {}

    def data(self, line: bytes) -> str | None:
        """The data of a keys line of this lane's shape (without its newline),
        None for any other line."""
        known = self._seen.get(line)
        if known is not None:
            return known
        if not line.startswith(self._head):
            return None
        try:
            text = line.decode("utf-8")
            data, end = scanstring(text, self._start)  # the JSON string, as json.loads reads it
        except ValueError:  # not UTF-8, or not a JSON string: the general way says what is wrong
            return None
        if text[end:] != "}}":
            return None
        if len(data) <= SHORT_KEY and len(self._seen) < SEEN_LINES:
            self._seen[line] = data
        return data  # type: ignore[no-any-return]


__all__ = ["HEAD", "KEYS_ID", "SEEN_LINES", "SHORT_KEY", "KeyLines", "KeysLane", "line_prefix"]
