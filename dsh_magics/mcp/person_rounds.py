"""A person answers a password prompt that a tool result shows (docs/mcp.md,
"Password prompts"): the notes every revision gets, and on 2026-07-28 the
call's multi round-trip (``InputRequiredResult`` with a URL-mode elicitation,
the signed ``requestState``, the retried call that continues the job)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import mcp.types as types
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from .. import tools
from ..terminal.api import Engine
from ..tools.schemas import DEFAULT_SEND_WAIT_MS
from .calls import CallRunner, call_wait_ms
from .elicit import ANSWERED_NOTE, PersonAnswers, UrlRequest
from .progress import PROGRESS_AFTER_S, wants_progress, with_progress
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
        note = await self.answers.replied(prompt, action, run_blocking)
        asked_ms = call_wait_ms(params.name, params.arguments)
        if asked_ms is None:  # a bash_send without wait_ms waits its default
            asked_ms = DEFAULT_SEND_WAIT_MS if params.name == "bash_send" else 0
        wait_ms = asked_ms if action == "accept" else 0
        waits_s = wait_ms / 1000  # the progress reporter's seconds
        work = functools.partial(
            tools.call,
            "bash_wait",
            {"job_id": issued.job_id, "session_id": issued.session_id, "timeout_ms": wait_ms, "on_input": False},
            caller_session=caller,
            registry=self.backend,
        )
        if waits_s > PROGRESS_AFTER_S and action == "accept" and wants_progress(ctx):
            result = await with_progress(ctx, work, waits_s, None)
        else:
            result = await run_blocking(work)
        self.calls.note_terminal(params.name, result)
        result, request = await self.notes(ctx, result)
        if request is not None:
            return self.input_required(ctx, params, request)
        if "error" not in result and ANSWERED_NOTE not in result.get("note", ""):
            result["note"] = "; ".join(filter(None, [note, result.get("note")]))
        return to_call_result(params.name, result)

    async def notes(
        self, ctx: Any, result: dict[str, Any]
    ) -> tuple[dict[str, Any], UrlRequest | None]:
        """A job waiting for a password is routed to a person (never to the
        agent); the result says so, and later that a person answered. On
        2026-07-28 the routing is a request for the call's result instead."""
        err = result.get("error")
        if err is None:
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


__all__ = ["PersonRounds"]
