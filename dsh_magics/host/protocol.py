"""The host's wire format (JSON lines, version 1) and the table of its operations.

An operation is one engine method plus one row of :data:`OPERATIONS` (docs/host.md, "Protocol").
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import socket
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .. import errors, jobs
from ..terminal import requests as R
from ..terminal import validation as V
from ..terminal.api import Engine
from ..terminal.result import ReadResult, Result, TerminalInfo

VERSION = 1

#: Largest request line the host accepts (a 200 KB command fits many times).
MAX_REQUEST = 16 * 1024 * 1024

#: Replies come from our own host; the bound only protects against a runaway.
MAX_REPLY = 1024 * 1024 * 1024

_RECV = 256 * 1024

#: A request's ``"reply"`` that asks for a reply only if it fails (host/requests.py).
ERRORS_ONLY = "errors"


class Oversized:
    """Marker yielded by :class:`LineReader` for a line longer than its limit."""

    def __init__(self, size: int) -> None:
        self.size = size


def encode(msg: dict[str, Any]) -> bytes:
    return json.dumps(msg, ensure_ascii=True, separators=(",", ":")).encode("ascii") + b"\n"


def request(msg_id: int | str, op: str, args: dict[str, Any]) -> bytes:
    return encode({"v": VERSION, "id": msg_id, "op": op, "args": args})


def ok_reply(msg_id: Any, value: Any) -> bytes:
    return encode({"v": VERSION, "id": msg_id, "ok": True, "value": value})


def error_reply(msg_id: Any, err: errors.DshError) -> bytes:
    return encode({"v": VERSION, "id": msg_id, "ok": False, "error": err.to_dict()})


def event_line(event: dict[str, Any]) -> bytes:
    return encode({"v": VERSION, "event": event})


class LineReader:
    """Split a stream socket into lines without ever holding more than
    ``limit`` bytes of one line: a peer that sends an endless line gets one
    :class:`Oversized` item and the rest of that line is skipped, so it cannot
    make the host's memory grow."""

    def __init__(self, sock: socket.socket, limit: int) -> None:
        self._sock = sock
        self._limit = limit
        self._buf = bytearray()
        self._pos = 0  # start of the first unread line in _buf
        self._scan = 0  # where to resume looking for a newline
        self._skipping = 0  # bytes of an oversized line discarded so far
        # One reused receive buffer: a fresh 256 KB bytes per recv() would
        # go through mmap/munmap on every message.
        self._chunk = bytearray(_RECV)
        self._view = memoryview(self._chunk)

    def next_item(self) -> bytes | Oversized | None:
        """The next line, an :class:`Oversized` marker, or None at end of stream."""
        buf = self._buf
        while True:
            if not self._skipping:
                nl = buf.find(b"\n", max(self._pos, self._scan))
                if nl >= 0:
                    start, self._pos = self._pos, nl + 1
                    self._scan = self._pos
                    if nl - start > self._limit:
                        return Oversized(nl - start)
                    return bytes(buf[start:nl])
                if self._pos:
                    del buf[: self._pos]
                    self._pos = 0
                self._scan = len(buf)
                if len(buf) > self._limit:
                    self._skipping = len(buf)
                    buf.clear()
                    self._scan = 0
            n = self._sock.recv_into(self._view)
            if not n:
                return None
            if not buf and not self._skipping and self._chunk[n - 1] == 0x0A and n <= self._limit:
                nl = self._chunk.find(b"\n", 0, n)
                if nl == n - 1:
                    return bytes(self._view[:nl])  # the usual case, one whole line (a person's key)
            if self._skipping:
                nl = self._chunk.find(b"\n", 0, n)
                if nl < 0:
                    self._skipping += n
                    continue
                size = self._skipping + nl
                self._skipping = 0
                buf += self._view[nl + 1 : n]
                return Oversized(size)
            buf += self._view[:n]

    def has_line(self) -> bool:
        """A whole line is in the buffer: :meth:`next_item` returns it without receiving."""
        return not self._skipping and self._buf.find(b"\n", max(self._pos, self._scan)) >= 0

    def __iter__(self) -> Iterator[bytes | Oversized]:
        while True:
            item = self.next_item()
            if item is None:
                return
            yield item


# ---------------------------------------------------------------------------
# engine values <-> wire dicts


def result_to_wire(r: Result) -> dict[str, Any]:
    return _shallow(r)


def result_from_wire(d: dict[str, Any]) -> Result:
    return Result(**_known(Result, d))


def info_to_wire(i: TerminalInfo) -> dict[str, Any]:
    return _shallow(i)


def info_from_wire(d: dict[str, Any]) -> TerminalInfo:
    return TerminalInfo(**_known(TerminalInfo, d))


def read_to_wire(r: ReadResult) -> dict[str, Any]:
    return _shallow(r)


def read_from_wire(d: dict[str, Any]) -> ReadResult:
    return ReadResult(**_known(ReadResult, d))


def job_to_wire(job: jobs.Job, *, with_result: bool = True) -> dict[str, Any]:
    """A job's identity and state; its result too unless ``with_result`` is
    False (listings: a thousand finished jobs' outputs are megabytes nobody
    asked for, and the client fetches a result when it is first read)."""
    result = job.result if job.done and with_result else None
    return {
        "id": job.id,
        "kind": job.kind,
        "owner": job.owner,
        "label": job.label,
        "status": job.status,
        "created_at": job.created_at,
        "settled_at": job.settled_at,
        "source": job.source,
        "result": result_to_wire(result) if isinstance(result, Result) else None,
    }


def event_to_wire(event: dict[str, Any]) -> dict[str, Any]:
    out = dict(event)
    if isinstance(out.get("result"), Result):
        out["result"] = result_to_wire(out["result"])
    return out


def _shallow(obj: Any) -> dict[str, Any]:
    # Not dataclasses.asdict: it deep-copies, and a read of 4000 lines would
    # copy every one of them before JSON encodes them anyway.
    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def _known(cls: type, d: dict[str, Any]) -> dict[str, Any]:
    # A newer host may add fields; an older client ignores what it cannot use
    # (pinned by tests/host/test_protocol.py::test_unknown_fields_from_a_newer_host_are_ignored).
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in d.items() if k in names}


# ---------------------------------------------------------------------------
# errors <-> wire

def _error_classes() -> dict[str, type[errors.DshError]]:
    out: dict[str, type[errors.DshError]] = {}
    stack: list[type[errors.DshError]] = [errors.DshError]
    while stack:
        cls = stack.pop()
        out.setdefault(cls.code, cls)
        stack.extend(cls.__subclasses__())
    return out


def error_from_wire(d: Any) -> errors.DshError:
    """Rebuild the engine's exception, so ``except NoSuchJob`` works the same
    through the host as in-process."""
    if not isinstance(d, dict):
        return errors.HostUnavailable(f"the terminal host sent a malformed error: {d!r}"[:300])
    code = str(d.get("code") or "ERROR")
    message = str(d.get("message") or code)
    raw = d.get("details")
    details = {k: v for k, v in (raw if isinstance(raw, dict) else {}).items() if k != "code" and isinstance(k, str)}
    cls = _error_classes().get(code, errors.DshError)
    if cls is errors.DshError:
        return errors.DshError(message, code=code, **details)
    return cls(message, **details)


def protocol_error(reason: str, message: str) -> errors.DshError:
    """A bad message (malformed, oversized, unknown version or op).

    It is the caller's mistake, so it carries ``INVALID_ARGUMENT`` plus a
    machine-readable ``details.protocol`` reason."""
    return errors.InvalidArgument(message, protocol=reason)


# ---------------------------------------------------------------------------
# the operations

#: Value kinds: how an operation's value goes on the wire and comes back.
#: The client turns "job" and "jobs" into its own job proxies.
TO_WIRE: dict[str, Callable[[Any], Any]] = {
    "raw": lambda v: v,
    "info": info_to_wire,
    "infos": lambda v: [info_to_wire(i) for i in v],
    "read": read_to_wire,
    "result": result_to_wire,
    "job": lambda v: None if v is None else job_to_wire(v),
}
FROM_WIRE: dict[str, Callable[[Any], Any]] = {
    "raw": lambda v: v,
    "info": info_from_wire,
    "infos": lambda v: [info_from_wire(d) for d in v],
    "read": read_from_wire,
    "result": result_from_wire,
}

Check = Callable[[Any, str], Any]


@dataclasses.dataclass(frozen=True)
class Operation:
    """One row of the host protocol.

    ``name`` is also the engine method called with the checked arguments
    as keywords, unless ``host`` says the host answers it itself. ``args``
    maps each wire argument to its check from
    :mod:`dsh_magics.terminal.validation` (the engine's own, so the wording
    is the same through the host); ``required`` names those that must be
    there. ``returns`` is the value kind (:data:`TO_WIRE`). ``block`` names
    a waiting argument the host caps (:func:`capped`), so no request holds a
    thread for long. Rows for engine methods are built by :func:`_contract`.
    """

    name: str
    args: Mapping[str, Check] = dataclasses.field(default_factory=dict)
    required: tuple[str, ...] = ()
    returns: str = "raw"
    host: bool = False
    block: str | None = None
    #: The typed request the engine's arguments become (terminal/requests.py), if any.
    request: type | None = None
    #: Arguments only the host uses (``base_cwd``): not part of the request.
    wire_only: frozenset[str] = frozenset()

    @property
    def engine_method(self) -> str | None:
        """The engine method behind this operation (None for the host's own)."""
        return None if self.host else self.name

    def check(self, args: Mapping[str, Any]) -> dict[str, Any]:
        """Refuse unknown and missing arguments, run each check; an argument
        given as None counts as not given (and is left out). A row with a
        ``request`` builds it (its one check of each argument): ``{"request":
        the request, **the wire-only arguments}``."""
        unknown = args.keys() - self.args.keys()
        if unknown:
            raise errors.InvalidArgument(
                f"unknown argument(s) for {self.name}: {', '.join(sorted(map(str, unknown)))}"
            )
        out: dict[str, Any] = {}
        given: dict[str, Any] = {}
        for name, check in self.args.items():
            value = args.get(name)
            if value is None:
                if name in self.required:
                    raise errors.InvalidArgument(f"missing argument {name!r} for {self.name}", field=name)
                continue
            if self.request is not None and name not in self.wire_only:
                given[name] = value
            else:
                out[name] = check(value, name)
        if self.request is not None:
            out["request"] = self.request.build(**given)  # type: ignore[attr-defined]
        return out


def _any_str(value: Any, name: str) -> str:
    """``exists`` takes any string: a malformed id simply does not exist."""
    return V.text(value, name)  # type: ignore[return-value]


def contract_args(name: str) -> tuple[dict[str, Check], tuple[str, ...]]:
    """The arguments of the engine method ``name`` as the contract declares
    them (:class:`~dsh_magics.terminal.api.Engine`): each parameter with its
    check from :data:`~dsh_magics.terminal.requests.CHECKS` (the table of a
    request's fields), and the names
    of those without a default (required on the wire)."""
    params = [p for p in inspect.signature(getattr(Engine, name)).parameters.values() if p.name != "self"]
    args = {p.name: R.CHECKS[p.name] for p in params}
    required = tuple(p.name for p in params if p.default is inspect.Parameter.empty)
    return args, required


def _contract(
    name: str,
    returns: str = "raw",
    *,
    wire: Mapping[str, Check] | None = None,
    checks: Mapping[str, Check] | None = None,
    block: str | None = None,
) -> Operation:
    """A row for an engine method: its arguments come from the contract's
    signature, so the table cannot drift from it. ``wire`` adds arguments
    only the host uses (``base_cwd``); ``checks`` replaces a check."""
    args, required = contract_args(name)
    args.update(checks or {})
    args.update(wire or {})
    return Operation(
        name, args, required, returns, block=block, request=R.REQUESTS.get(name), wire_only=frozenset(wire or ())
    )


#: Longest one request may block a host thread (``block`` arguments are
#: capped to it; clients wait longer in slices or on their job proxies).
MAX_BLOCK_SECONDS = 30.0

_BASE = {"base_cwd": V.text}

OPERATIONS: dict[str, Operation] = {
    op.name: op
    for op in (
        # the host's own operations
        Operation("hello", {"client": V.mapping}, host=True),
        Operation("status", host=True),
        Operation("subscribe", {"types": V.strings}, host=True),
        Operation("detach", host=True),
        # an attached viewer's live stream of a session (host/stream.py)
        Operation("watch", {"session_id": V.session_id, "tty": V.flag, "keys": V.flag, "caller": V.caller, "detach": V.text},
                  ("session_id",), host=True),  # fmt: skip
        # its handed terminal (host/tty_out.py): the answer to a screen, the bell, giving it back
        Operation("tty_go", {"session_id": V.session_id, "screen": V.count, "live": V.flag},
                  ("session_id", "screen", "live"), host=True),  # fmt: skip
        Operation("tty_bell", {"session_id": V.session_id}, ("session_id",), host=True),
        Operation("tty_release", {"session_id": V.session_id}, ("session_id",), host=True),
        Operation("shutdown", host=True),
        Operation("jobs", {"owner": V.text, "running": V.flag, "results": V.flag}, (), "jobs", host=True),
        # answer pages (host/pages.py): the host serves the page for a password prompt
        Operation("page_open", {"session_id": V.session_id, "job_id": V.job_id}, ("session_id", "job_id"), host=True),
        Operation("page_wait", {"page": V.text, "timeout": V.timeout}, ("page",), host=True, block="timeout"),
        Operation("page_close", {"page": V.text}, ("page",), host=True),
        # the engine contract: one row per method of terminal/api.py's Engine
        _contract("attach", "info", wire=_BASE),
        _contract("exec", "exec", wire=_BASE, block="wait_ms"),
        _contract("wait", "result", block="timeout_ms"),
        _contract("send", "result", block="wait_ms"),
        _contract("result", "result"),
        _contract("job", "job"),
        _contract("latest_job", "job"),
        _contract("read", "read"),
        _contract("interrupt", "job"),
        _contract("close"),
        _contract("close_all"),
        _contract("list", "infos"),
        _contract("info", "info"),
        _contract("exists", checks={"session_id": _any_str}),
        _contract("wait_output", block="timeout"),
        _contract("output_seq"),
        _contract("screen"),
        _contract("resize"),
        _contract("type_keys"),
        _contract("inputs"),
    )
}


def capped(op: Operation, args: dict[str, Any]) -> dict[str, Any]:
    """``args`` with the row's blocking argument capped at
    :data:`MAX_BLOCK_SECONDS`: the one place a host request's wait is bounded.
    A missing ``timeout`` means the cap; a missing ``wait_ms`` stays "no wait".
    In a request (``*_ms``) the cap is in milliseconds."""
    if op.block is None:
        return args
    request = args.get("request")
    if request is not None:
        cap_ms = R.ms_from_seconds(MAX_BLOCK_SECONDS)
        limit = getattr(request, op.block)
        if limit is not None or op.block == "timeout_ms":
            args["request"] = dataclasses.replace(request, **{op.block: cap_ms if limit is None else min(limit, cap_ms)})
        return args
    limit = args.get(op.block)
    args[op.block] = MAX_BLOCK_SECONDS if limit is None else min(limit, MAX_BLOCK_SECONDS)
    return args


def noted(args: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments of a checked request as a flat dict (who asks about which session)."""
    request = args.get("request")
    if request is None:
        return dict(args)
    return {**{f.name: getattr(request, f.name) for f in dataclasses.fields(request)}, **args}
