"""An attached person's keys on the wire: one ``type_keys`` request line per read
of their terminal, put together from a prefix made once (:func:`line_prefix`).

Every key a person types at ``dsh-magics attach`` is such a line, and the time
from the key to its echo is what they feel (benchmarks/README.md,
``bench_attach.py``). The host does it through its general dispatch like any
request (host/requests.py): a short path beside it that took this one shape
apart with a smaller parse saved 3 us of the host's 21 us per key (of the 0.7-1 ms
from a key to its echo) and was removed (benchmarks/README.md).
"""

from __future__ import annotations

from . import protocol as P

#: The request's id: its errors name the operation (attach/link.py ``Pipe``).
KEYS_ID = "k:type_keys"

#: How every such line starts, up to its arguments.
HEAD = P.encode({"v": P.VERSION, "id": KEYS_ID, "op": "type_keys", "reply": P.ERRORS_ONLY, "args": {}})[: -len(b"{}}\n")]


def line_prefix(session_id: str, caller: str) -> bytes:
    """A line of the keys for ``session_id`` up to its data: append the data
    as a JSON string and ``}}\\n``."""
    line = P.encode({"v": P.VERSION, "id": KEYS_ID, "op": "type_keys", "reply": P.ERRORS_ONLY,
                     "args": {"session_id": session_id, "caller": caller, "data": ""}})  # fmt: skip
    assert line.startswith(HEAD)
    return line[: -len(b'""}}\n')]


__all__ = ["HEAD", "KEYS_ID", "line_prefix"]
