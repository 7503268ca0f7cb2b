"""Where a tool call runs: on the event loop's thread when it cannot block
for long, else on a worker thread (docs/mcp.md, "Where calls run"), and how
a bash_exec's wait ends at a password prompt."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from .. import tools
from ..errors import HostUnavailable, NoSuchJob
from ..terminal.api import Engine
from ..terminal.deadline import Deadline
from ..terminal.requests import FIELDS
from .progress import PROGRESS_AFTER_MS, lines_probe, wants_progress, with_progress
from .workers import run_blocking

#: Calls that only look, run on the event loop's thread (see CallRunner.run).
_INLINE_TOOLS = frozenset(("bash_list", "bash_read"))
#: How long a bash_exec may hold the event loop's thread before its wait moves to a worker.
INLINE_MS = 5
_STARTED_FIELDS = frozenset(("job_id", "session_id", "status"))
#: A job status after which the terminal's shell is gone.
_GONE = frozenset(("shell_exited",))


class CallRunner:
    """Runs ``tools.call`` over one engine for the MCP handlers; remembers
    which terminals it saw running (an exec there starts no shell)."""

    def __init__(self, backend: Engine) -> None:
        self.backend = backend
        self._running_terminals: set[str] = set()

    async def run(self, ctx: Any, name: str, arguments: Any, caller: str) -> dict[str, Any]:
        """``tools.call``, on a worker thread unless it cannot block for long.

        A hop to a worker thread and back costs more than a quick call
        (benchmarks/README.md, bench_mcp.py), so calls that only look
        (bash_list, bash_read) run on the event loop's thread, and a bash_exec
        on a terminal this server saw running gets its first INLINE_MS there;
        only the rest of a longer wait moves to a worker thread.
        """
        call = functools.partial(tools.call, caller_session=caller, registry=self.backend)
        if name in _INLINE_TOOLS:
            return call(name, arguments)
        work: Callable[[], dict[str, Any]] = functools.partial(call, name, arguments)
        wait_ms = exec_wait_ms(name, arguments)
        if wait_ms is not None and self._warm(arguments, caller):
            started = time.monotonic()
            first = call(name, {**arguments, "wait_ms": min(wait_ms, INLINE_MS)})
            if wait_ms <= INLINE_MS or set(first) != _STARTED_FIELDS:
                return first  # finished (or refused) within INLINE_MS: as the whole call would
            work = functools.partial(self._rest_of_exec, first, Deadline.after_ms(wait_ms, started), caller)
        elif wait_ms is not None and wait_ms > INLINE_MS:
            # A terminal that may first start a shell: all of it on a worker.
            work = functools.partial(self._exec_in_two, arguments, wait_ms, caller)
        waits_ms = call_wait_ms(name, arguments)
        if waits_ms is not None and waits_ms > PROGRESS_AFTER_MS and wants_progress(ctx):
            return await with_progress(ctx, work, waits_ms, lines_probe(self.backend, name, arguments))
        return await run_blocking(work)

    def _exec_in_two(self, arguments: dict[str, Any], wait_ms: int, caller: str) -> dict[str, Any]:
        """A bash_exec with a wait: its start (and first INLINE_MS), then
        :meth:`_rest_of_exec`, so a password prompt ends the wait as it does
        on a warm terminal."""
        started = time.monotonic()
        first = tools.call(
            "bash_exec", {**arguments, "wait_ms": INLINE_MS}, caller_session=caller, registry=self.backend
        )
        if set(first) != _STARTED_FIELDS:
            return first
        return self._rest_of_exec(first, Deadline.after_ms(wait_ms, started), caller)

    def _rest_of_exec(self, started: dict[str, Any], deadline: Deadline, caller: str) -> dict[str, Any]:
        """The rest of a bash_exec's wait_ms: its result if the job finishes
        by ``deadline``, else the started job, or the wait's error (what
        the engine's exec does). A job that waits for a password ends the
        wait early, with ``awaiting_input``: a person is asked for it
        (docs/mcp.md), where the engine's exec would wait on to no end."""
        on_input = True
        while True:
            res = tools.call(
                "bash_wait",
                {
                    "job_id": started["job_id"],
                    "session_id": started["session_id"],
                    "timeout_ms": deadline.left_ms(),
                    "on_input": on_input,
                },
                caller_session=caller,
                registry=self.backend,
            )
            waiting = res.get("awaiting_input")
            if on_input and res.get("reason") == "awaiting_input" and not (waiting or {}).get("secret"):
                on_input = False  # input the agent may give: as the engine's exec, wait on
                continue
            break
        if res.get("reason") == "awaiting_input" and "error" not in res:
            return res  # a password prompt: the job's state, for a person to answer
        if "error" in res:
            # HOST_UNAVAILABLE when the host died under the wait: the engine
            # reports it to this call (HostClient.wait), as its exec would.
            return lost_under_exec(res)
        if res.get("timed_out") or res.get("status") == "running":
            return started
        res.pop("reason", None)  # a bash_wait field; bash_exec results have none
        return res

    def _warm(self, arguments: dict[str, Any], caller: str) -> bool:
        """Is the addressed terminal one this server saw running? (Else an
        exec may first start a shell, which takes long.) A session id that is
        not a string is the tool's to refuse (a list here raised TypeError:
        tests/reliability/test_mcp_fuzz.py)."""
        sid = arguments.get("session_id", caller)
        return isinstance(sid, str) and sid in self._running_terminals

    def note_terminal(self, name: str, result: dict[str, Any]) -> None:
        """Learn from a call's result which terminals run (see :meth:`_warm`)."""
        sid = result.get("session_id")
        if name == "bash_close" or (isinstance(sid, str) and result.get("status") in _GONE):
            self._running_terminals.clear()  # cheap to learn again
        elif isinstance(sid, str) and "error" not in result:
            self._running_terminals.add(sid)


def lost_under_exec(res: dict[str, Any]) -> dict[str, Any]:
    """A bash_exec's wait error as its caller must see it. The job was started
    in this very call, so a host that exited before the wait began (its loss
    already seen, the job's lookup NO_SUCH_JOB) was lost under this call:
    HOST_UNAVAILABLE, as the engine's exec reports it (pinned by
    tests/host/test_lost_host_report.py::test_a_host_lost_between_an_exec_start_and_its_wait_is_host_unavailable)."""
    error = res["error"]
    if error.get("code") != NoSuchJob.code or not (error.get("details") or {}).get("host_lost"):
        return res
    return {
        "error": {
            "code": HostUnavailable.code,
            "message": "the terminal host is gone: it exited while this call waited, with its terminals "
            "and their jobs. The next call starts a fresh host.",
        }
    }


def exec_wait_ms(name: str, arguments: Any) -> int | None:
    """A bash_exec's valid wait_ms, by the table's bounds for tools (anything else
    goes to tools.call as given, to be refused there)."""
    if name != "bash_exec" or not isinstance(arguments, dict):
        return None
    value = arguments.get("wait_ms")
    arg = FIELDS["wait_ms"].tool_arg
    assert arg is not None and arg.minimum is not None and arg.maximum is not None
    if isinstance(value, bool) or not isinstance(value, int) or not arg.minimum <= value <= arg.maximum:
        return None
    return value


def call_wait_ms(name: str, arguments: Any) -> int | None:
    """How long this call may block waiting, in milliseconds, if it is a waiting call."""
    if not isinstance(arguments, dict):
        return None
    for key in ("timeout_ms", "wait_ms"):
        value = arguments.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
            return max(0, int(value))
    if name == "bash_wait":
        return tools.DEFAULT_WAIT_TIMEOUT_MS
    return None


__all__ = ["INLINE_MS", "CallRunner", "call_wait_ms", "exec_wait_ms"]
