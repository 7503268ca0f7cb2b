"""An attached person's keys on the wire: one ``type_keys`` request line per read
of their terminal, in a shape both ends know.

Every key a person types at ``dsh-magics attach`` is such a line, and the time
from the key to its echo is what they feel (benchmarks/README.md,
``bench_attach.py``). So the client puts the line together from a prefix made
once (:func:`line_prefix`), and the host takes a line that starts with
:data:`HEAD` apart with one small JSON parse (:func:`parse`) instead of the
general dispatch. It is the same request: the same operation, the same checks
(the engine's ``type_keys`` checks its arguments, the host the viewer's
read-only flag), the same error reply; anything else in that shape goes the
general way.
"""

from __future__ import annotations

import json
from typing import Any

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


def parse(item: bytes) -> dict[str, Any] | None:
    """The arguments of a keys line (``session_id``, ``data``, maybe
    ``caller``, all strings); None for anything else."""
    if not item.startswith(HEAD) or not item.endswith(b"}"):
        return None
    try:
        args = json.loads(item[len(HEAD) : -1])
    except (ValueError, RecursionError):
        return None
    if type(args) is not dict or not set(args) <= {"session_id", "caller", "data"}:
        return None
    if type(args.get("session_id")) is not str or type(args.get("data")) is not str:
        return None
    caller = args.get("caller")
    if caller is not None and type(caller) is not str:
        return None
    return args


__all__ = ["HEAD", "KEYS_ID", "line_prefix", "parse"]
