"""A tool result as MCP: the short text it carries next to its structured
content, and the whole ``CallToolResult``.

Many hosts give a model only text blocks, so it says what the model acts on; a
group's result is its merged view (:mod:`.group_text`); unknown tools get JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .group_text import is_group, render_group


def render(name: str, result: dict[str, Any]) -> str:
    """Text for ``result`` of tool ``name`` (a success or an ``{"error": ...}``)."""
    err = result.get("error")
    if isinstance(err, dict):
        field = f" (field {err['field']})" if err.get("field") else ""
        return f"{err.get('code', 'ERROR')}: {err.get('message', '')}{field}"
    renderer = render_group if is_group(result) else _RENDERERS.get(name)
    if renderer is None and {"job_id", "session_id", "status"} <= result.keys():
        renderer = _job  # a tool added later that reports a job, like bash_exec
    if renderer is not None:
        try:
            return renderer(result)
        except (KeyError, TypeError, ValueError):
            return _json(result)  # a result shape we do not know (yet): show it as JSON
    return _json(result)


def _json(result: dict[str, Any]) -> str:
    return json.dumps(result, ensure_ascii=False, separators=(",", ":"))


def _job(r: dict[str, Any]) -> str:
    if "output" not in r:  # started, not waited for
        return (
            f"job {r['job_id']} in session {r['session_id']}: {r['status']}; "
            "bash_wait with this job_id returns its result"
        )
    status = r["status"]
    if r.get("timed_out"):
        head = (
            f"still running after {r['duration_s']}s (timed out; bash_wait again to keep waiting)"
        )
    elif r.get("exit_code") is not None:
        head = f"{status}, exit {r['exit_code']} in {r['duration_s']}s"
    else:
        head = f"{status} after {r['duration_s']}s"
    if r.get("signal") is not None:
        head += f", signal {r['signal']}"
    parts = [f"job {r['job_id']} in session {r['session_id']}: {head}; cwd {r.get('cwd')}"]
    facts = []
    if r.get("omitted_chars"):
        facts.append(
            f"output is {r['output_chars']} chars / {r['output_lines']} lines; "
            f"{r['omitted_chars']} chars ({r['omitted_lines']} lines) omitted in the middle, "
            "bash_read pages through them"
        )
    if r.get("dropped_lines"):
        facts.append(f"{r['dropped_lines']} earlier lines were already discarded by the terminal")
    if r.get("fresh_shell"):
        facts.append("ran in a fresh shell: earlier state is gone")
    if r.get("note"):
        facts.append(f"note: {r['note']}")
    # Fields added to job results later (shown so a text-only model sees them too).
    facts += [
        f"{k}: {json.dumps(v, ensure_ascii=False)}"
        for k, v in r.items()
        if k not in _JOB_FIELDS and v not in (None, False, "", [], {})
    ]
    parts += facts
    out = r["output"]
    parts.append(out.rstrip("\n") if out else "(no output)")
    return "\n".join(parts)


_JOB_FIELDS = frozenset(
    (
        "job_id session_id status exit_code timed_out output output_chars output_lines "
        "omitted_chars omitted_lines dropped_lines cwd duration_s signal note fresh_shell"
    ).split()
)


def _terminal(t: dict[str, Any]) -> str:
    job = f", job {t['job_id']} running" if t.get("job_id") else ""
    own = " (yours)" if t.get("own") else ""
    return f"{t['session_id']}{own}: {t['status']}, cwd {t.get('cwd')}, pid {t.get('pid')}{job}"


def _attach(r: dict[str, Any]) -> str:
    return _terminal(r) + ("; a new shell was started" if r.get("opened") else "")


def _read(r: dict[str, Any]) -> str:
    head = f"session {r['session_id']}, lines {r['first_line']}..{r['next_line']} (next since={r['next_line']})"
    if r.get("more"):
        head += ", more after this"
    if r.get("omitted_lines"):
        head += f", {r['omitted_lines']} lines not shown"
    if r.get("dropped"):
        head += f", {r['dropped']} lines already discarded"
    if r.get("running_job_id"):
        head += f", job {r['running_job_id']} running"
    return head + "\n" + (r["text"] or "(no output)")


def _interrupt(r: dict[str, Any]) -> str:
    if r["interrupted"]:
        return f"session {r['session_id']}: Ctrl-C sent to job {r['job_id']}; bash_wait shows how it ended"
    return f"session {r['session_id']}: nothing was running"


def _close(r: dict[str, Any]) -> str:
    return f"closed {r['count']} terminal(s)" + (
        f": {', '.join(r['closed'])}" if r["closed"] else ""
    )


def _list(r: dict[str, Any]) -> str:
    own = r.get("own_session")
    rows = [_terminal(t) for t in r["terminals"]]
    head = f"{len(rows)} terminal(s); your session is {own}" if own else f"{len(rows)} terminal(s)"
    return "\n".join([head, *rows])


_RENDERERS: dict[str, Callable[[dict[str, Any]], str]] = {
    "bash_attach": _attach,
    "bash_exec": _job,
    "bash_wait": _job,
    "bash_read": _read,
    "bash_interrupt": _interrupt,
    "bash_close": _close,
    "bash_list": _list,
}


def to_call_result(name: str, result: dict[str, Any]) -> dict[str, Any]:
    """A ``tools.call`` result as an MCP ``CallToolResult`` (wire form):
    structured content plus a short text.

    ``{"error": ...}`` becomes ``isError`` with ``CODE: message`` as its only
    content and no structured content: clients built on the TypeScript SDK
    check structured content against the tool's output schema even on an
    error, and an error is not a result (tests/mcp/test_ts_clients.py pins it).
    Built as a dict, not the SDK's model: the SDK checks the result's shape
    as it sends it either way, and a model built only to be dumped again
    cost about 20 us a call (benchmarks/README.md).
    """
    text = [{"type": "text", "text": render(name, result)}]
    # (resultType: 2026-07-28 requires it; the SDK drops it on older revisions)
    if "error" in result:
        return {"resultType": "complete", "content": text, "isError": True}
    return {"resultType": "complete", "content": text, "structuredContent": result, "isError": False}
