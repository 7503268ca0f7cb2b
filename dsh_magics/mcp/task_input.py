"""A task whose job waits for a password: the tasks extension's
``input_required`` status (docs/mcp.md, "Long jobs as tasks").

Each working task has a follower on the server's event loop: it waits on the
task's job in the engine (a worker thread holds the wait), and when the job
waits for hidden input it asks :class:`PersonAnswers` to route the prompt to
a person: for a client that declared URL-mode elicitation, the task becomes
``input_required`` with a URL-mode ``elicitation/create`` to the one-time
answer page in its ``inputRequests`` (answered with ``tasks/update``);
otherwise the task stays ``working`` and its ``statusMessage`` says how a
person can answer. The secret goes from the person's browser to the
terminal; it never passes through this module or the MCP client.

Polls (``tasks/get``) stay local: they read the board this follower keeps.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.shared.exceptions import MCPError

from ..answer.page import SecretPrompt, pending_secret
from .elicit import PersonAnswers, UrlRequest
from .task_board import TaskBoard

#: One wait of a follower on a job that is not at a prompt (it returns at
#: once when the job ends or waits for input).
FOLLOW_SLICE_MS = 30_000
#: One wait on a job that sits at a prompt: it ends when the job ends; after
#: it the follower looks again whether the job still waits at that prompt.
AT_PROMPT_SLICE_MS = 1_000

Call = Callable[[Any, str, dict[str, Any]], dict[str, Any]]


class TaskFollower:
    """Follows each working task's job and routes its password prompts to a person.

    ``state(ctx, tid)`` is the task's full look (it completes the task on the
    board once the job ended); ``client_id(ctx)`` names the client an input
    request is for.
    """

    def __init__(
        self,
        board: TaskBoard,
        engine: Any,
        call: Call,
        run_blocking: Callable[[Callable[[], Any]], Awaitable[Any]],
        answers: PersonAnswers,
        client_id: Callable[[Any], str],
        state: Callable[[Any, str], Awaitable[dict[str, Any]]],
    ) -> None:
        self._board = board
        self._engine = engine
        self._call = call
        self._run_blocking = run_blocking
        self._answers = answers
        self._client_id = client_id
        self._state = state
        self._following: dict[str, asyncio.Task[None]] = {}

    def follow(self, ctx: Any, tid: str, job_id: str, session_id: str) -> None:
        """Follow the task (once; on the event loop's thread). ``ctx`` is the
        request that made or found it: its client is the one asked."""
        if tid in self._following:
            return
        task = asyncio.get_running_loop().create_task(self._run(ctx, tid, job_id, session_id))
        self._following[tid] = task
        task.add_done_callback(lambda _: self._following.pop(tid, None))

    async def close(self) -> None:
        tasks = list(self._following.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _run(self, ctx: Any, tid: str, job_id: str, session_id: str) -> None:
        asked: SecretPrompt | None = None
        at_prompt = False
        while self._board.status(tid) in ("working", "input_required"):
            if at_prompt:  # wait for the job to move on, then look whether it still waits
                res = await self._wait(ctx, job_id, session_id, AT_PROMPT_SLICE_MS, on_input=False)
                if _running(res):
                    res = await self._wait(ctx, job_id, session_id, 0, on_input=True)
            else:
                res = await self._wait(ctx, job_id, session_id, FOLLOW_SLICE_MS, on_input=True)
            if not _running(res):
                with contextlib.suppress(MCPError):  # its job is forgotten (a new host): a poll says so
                    await self._state(ctx, tid)  # completes the task on the board
                return
            waiting = res.get("awaiting_input") if res.get("reason") == "awaiting_input" else None
            prompt = None
            if isinstance(waiting, dict) and waiting.get("secret"):
                prompt = await self._run_blocking(lambda: pending_secret(self._engine, session_id))
                if prompt is not None and prompt.job_id != job_id:
                    prompt = None
            if prompt != asked:
                self._board.withdraw(tid)  # an earlier prompt is gone, and its request
                asked = prompt
                if prompt is not None:
                    await self._ask(ctx, tid, prompt)
            at_prompt = waiting is not None

    async def _wait(
        self, ctx: Any, job_id: str, session_id: str, timeout_ms: int, on_input: bool
    ) -> dict[str, Any]:
        args = {"job_id": job_id, "session_id": session_id, "timeout_ms": timeout_ms, "on_input": on_input}
        result: dict[str, Any] = await self._run_blocking(
            functools.partial(self._call, ctx, "bash_wait", args)
        )
        return result

    async def _ask(self, ctx: Any, tid: str, prompt: SecretPrompt) -> None:
        asked = await self._answers.ask(ctx, prompt, self._run_blocking)
        if isinstance(asked, UrlRequest):
            # unique over the task's life: the nonce is fresh for each request
            self._board.ask(tid, f"person-{asked.nonce[:12]}", self._client_id(ctx), asked)
        else:
            self._board.say(tid, asked)


def _running(result: dict[str, Any]) -> bool:
    return "error" not in result and result.get("status") == "running"


__all__ = ["TaskFollower"]
