"""A person answers a password prompt that a tool result shows (docs/mcp.md,
"Password prompts"): the notes every revision gets, and on 2026-07-28 the
call's multi round-trip (``InputRequiredResult`` with a URL-mode elicitation,
the signed ``requestState``, the retried call that continues the job).

A group's result (``bash_wait``/``bash_read`` on a group id) routes each
member whose job waits for a password, once per member (docs/fanout.md,
"Agent tools and MCP"): on older revisions one elicitation per member in
turn; on 2026-07-28 one member per round, the retried call waits on the
group again and routes the next."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import mcp.types as types
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from .. import tools
from ..terminal.api import Engine
from ..tools.group_tools import is_group_id, members
from ..tools.schemas import DEFAULT_SEND_WAIT_MS
from .calls import CallRunner, call_wait_ms
from .elicit import ANSWERED_NOTE, PersonAnswers, UrlRequest
from .group_text import is_group
from .progress import PROGRESS_AFTER_MS, wants_progress, with_progress
from .render import to_call_result
from .request_state import InvalidState, Issued, StateSigner
from .workers import run_blocking

#: The one message for a retried call's state that is not good (forged,
#: another client's or call's, used, expired); the reason stays here.
_BAD_STATE = "invalid, expired or already used requestState"


class PersonRounds:
    """Routes the password prompts that tool results show to a person.

    ``client_id(ctx)`` names the calling client (a signed state binds it);
    ``calls`` learns from the results which terminals run.
    """

    def __init__(
        self, backend: Engine, answers: PersonAnswers, client_id: Callable[[Any], str], calls: CallRunner
    ) -> None:
        self.backend = backend
        self.answers = answers
        self.states = StateSigner()
        self._client_id = client_id
        self.calls = calls

    def input_required(
        self, ctx: Any, params: types.CallToolRequestParams, request: UrlRequest
    ) -> types.InputRequiredResult:
        """The call's result when a person must answer a password prompt on
        2026-07-28: a URL-mode elicitation to the one-time page, and a signed
        state that lets only this client's retry of this call continue the job."""
        key = f"person-{request.nonce[:12]}"
        issued = Issued(request.prompt.job_id, request.prompt.session_id, request.nonce, key)
        state = self.states.issue(
            tool=params.name, arguments=params.arguments, client=self._client_id(ctx), issued=issued
        )
        ask = types.ElicitRequest(
            params=types.ElicitRequestURLParams(mode="url", message=request.message, url=request.url)
        )
        return types.InputRequiredResult(input_requests={key: ask}, request_state=state)

    async def after_person(
        self, ctx: Any, params: types.CallToolRequestParams, caller: str
    ) -> dict[str, Any] | types.InputRequiredResult:
        """A retried call with the client's reply: the job goes on (no command
        runs again); a state this server did not issue to this client for
        this call, or one already used, is -32602."""
        try:
            issued = self.states.check(
                str(params.request_state),
                tool=params.name,
                arguments=params.arguments,
                client=self._client_id(ctx),
            )
        except InvalidState:
            raise MCPError(code=INVALID_PARAMS, message=_BAD_STATE) from None
        prompt = self.answers.take_request(issued.nonce, issued.job_id)
        if prompt is None:  # used once already
            raise MCPError(code=INVALID_PARAMS, message=_BAD_STATE)
        reply = (params.input_responses or {}).get(issued.key)
        action = str(getattr(reply, "action", None) or "cancel")  # no reply: as dismissed
        group_id = _group_call(params.name, params.arguments)
        # (a group's result reports each member's answer itself, labelled: kept for it)
        note = await self.answers.replied(prompt, action, run_blocking, keep_answered=group_id is not None)
        asked_ms = call_wait_ms(params.name, params.arguments)
        if asked_ms is None:  # a bash_send without wait_ms waits its default
            asked_ms = DEFAULT_SEND_WAIT_MS if params.name == "bash_send" else 0
        wait_ms = asked_ms if action == "accept" else 0
        if group_id is not None:
            # the group again: the others go on, the next member at a prompt is routed in turn
            again = {k: v for k, v in (params.arguments or {}).items() if k in ("detail", "diff")}
            again.update(job_id=group_id, timeout_ms=wait_ms, on_input=True)
        else:
            again = {"job_id": issued.job_id, "session_id": issued.session_id, "timeout_ms": wait_ms, "on_input": False}
        work = functools.partial(tools.call, "bash_wait", again, caller_session=caller, registry=self.backend)
        if wait_ms > PROGRESS_AFTER_MS and action == "accept" and wants_progress(ctx):
            result = await with_progress(ctx, work, wait_ms, None)
        else:
            result = await run_blocking(work)
        self.calls.note_terminal(params.name, result)
        result, request = await self.notes(ctx, result)
        if request is not None:
            return self.input_required(ctx, params, request)
        if group_id is not None:
            note = "" if note == ANSWERED_NOTE else f"{self._label(group_id, issued.job_id)}: {note}"
        if "error" not in result and ANSWERED_NOTE not in result.get("note", ""):
            result["note"] = "; ".join(filter(None, [note, result.get("note")]))
        return to_call_result("bash_wait" if group_id is not None else params.name, result)

    async def notes(
        self, ctx: Any, result: dict[str, Any]
    ) -> tuple[dict[str, Any], UrlRequest | None]:
        """A job waiting for a password is routed to a person (never to the
        agent); the result says so, and later that a person answered. On
        2026-07-28 the routing is a request for the call's result instead."""
        err = result.get("error")
        if err is None:
            if is_group(result) and "merged" in result:
                return await self._group_notes(ctx, result)
            if "job_id" not in result:
                return result, None
            notes, request = await self.answers.notes_for(ctx, result, run_blocking)
            if request is not None or not notes:
                return result, request
            return {**result, "note": "; ".join([*filter(None, [result.get("note")]), *notes])}, None
        details = err.get("details") or {}
        if err.get("code") != "SECRET_INPUT" or not isinstance(details.get("session_id"), str):
            return result, None
        waiting = {
            "job_id": details.get("job_id"),
            "session_id": details["session_id"],
            "awaiting_input": {"secret": True},
        }
        notes, request = await self.answers.notes_for(ctx, waiting, run_blocking)
        if request is not None or not notes:
            return result, request
        return {"error": {**err, "message": f"{err['message']}. Over MCP: {'; '.join(notes)}"}}, None

    def _label(self, group_id: str, job_id: str) -> str:
        """The target of the group's member that runs ``job_id`` (the job id if gone)."""
        found = [m["target"] for m in members(self.backend, group_id) if m["job_id"] == job_id]
        return str(found[0]) if found else job_id

    async def _group_notes(
        self, ctx: Any, result: dict[str, Any]
    ) -> tuple[dict[str, Any], UrlRequest | None]:
        """A group's members at a password prompt, each routed to a person
        once (its own one-time page); a person's answer since the last
        result, per member. The notes name each member's target."""
        runs = members(self.backend, result["group_id"])
        asked: list[str] = []
        for run in runs:
            if not (run["awaiting"] or {}).get("secret") or run["job_id"] is None:
                continue
            member = {"job_id": run["job_id"], "session_id": run["session_id"], "awaiting_input": {"secret": True}}
            said, request = await self.answers.notes_for(ctx, member, run_blocking)
            if request is not None:  # (answers since the last result stay for the one that has no request)
                return result, request
            asked += [f"{run['target']}: {n}" for n in said]
        notes = [
            f"{run['target']}: {ANSWERED_NOTE}"
            for run in runs
            if run["job_id"] is not None and self.answers.take_answered(run["job_id"])
        ]
        notes += asked
        if not notes:
            return result, None
        return {**result, "note": "; ".join([*filter(None, [result.get("note")]), *notes])}, None


def _group_call(name: str, arguments: dict[str, Any] | None) -> str | None:
    """The group id a bash_wait or bash_read call is on, or None."""
    args = arguments or {}
    gid = args.get("job_id") if name == "bash_wait" else args.get("group_id") if name == "bash_read" else None
    return gid if isinstance(gid, str) and is_group_id(gid) else None


__all__ = ["PersonRounds"]
