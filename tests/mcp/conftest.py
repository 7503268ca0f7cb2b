"""Fixtures for the MCP server tests: the real ``dsh-magics mcp`` driven over
stdio by the SDK's own client, in a private host runtime directory.

Every process a test starts (the server, the host it starts, shells, jobs)
carries a per-test token in its environment, so teardown can prove with
``/proc`` that nothing is left, after stopping the private hosts.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

import anyio
import pytest
from jsonschema import Draft202012Validator
from mcp import Client, ClientSession, StdioServerParameters
from mcp.client.extension import ClientExtension
from mcp.client.stdio import stdio_client
from mcp.types import (
    CallToolResult,
    ClientCapabilities,
    ElicitationCapability,
    FormElicitationCapability,
    Implementation,
    InitializedNotification,
    InitializeRequest,
    InitializeRequestParams,
    InitializeResult,
    UrlElicitationCapability,
)

from dsh_magics import tools

from ..conftest import pids_with_env, wait_until
from ..host.conftest import new_dir, stop_everything

TOKEN_VAR = "DSH_MCP_TEST_TOKEN"
#: The protocol revisions the server is tested on: the current one (stateless,
#: ``server/discover``, the SDK's ``Client()`` default) and two handshake ones.
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"
OLDER = "2025-06-18"
VERSIONS = (MODERN, HANDSHAKE, OLDER)
#: Bound on any single protocol step; a hang fails the test instead of the suite.
STEP = 60


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@dataclass
class ServerEnv:
    """Where a test's servers run: private host dir, token, stderr log, cwd."""

    host_dir: str
    token: str
    log: str
    cwd: str

    @property
    def vars(self) -> dict[str, str]:
        return {
            "DSH_MAGICS_HOST_DIR": self.host_dir,
            "DSH_MAGICS_LOGIN": "0",
            "PYENV_REHASH_TIMEOUT": "1",
            TOKEN_VAR: self.token,
            # The SDK's stdio client passes only a few variables on: keep
            # the checkout under test first on the server's path.
            **({"PYTHONPATH": os.environ["PYTHONPATH"]} if os.environ.get("PYTHONPATH") else {}),
        }

    def pids(self) -> list[int]:
        return pids_with_env(TOKEN_VAR, self.token)

    def log_text(self) -> str:
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""


@pytest.fixture
def server_env(tmp_path) -> Iterator[ServerEnv]:
    host_dir = new_dir()  # a short path: a Unix socket path must fit in 108 bytes
    work = tmp_path / "work"
    work.mkdir()
    env = ServerEnv(host_dir, uuid.uuid4().hex, str(tmp_path / "server.log"), str(work))
    try:
        yield env
    finally:
        stop_everything(host_dir)
        try:
            wait_until(lambda: not env.pids(), 20, msg=f"processes left: {env.pids()}")
        finally:
            for pid in env.pids():
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
            shutil.rmtree(host_dir, ignore_errors=True)


class Mcp:
    """The SDK client (a ``ClientSession`` on a handshake revision, a
    ``Client`` on 2026-07-28) plus checks every result must pass."""

    def __init__(self, session: Any, init: Any, version: str = HANDSHAKE) -> None:
        self.session = session
        self.init = init
        self.version = version

    async def call(
        self, name: str, arguments: dict[str, Any] | None = None, **kw: Any
    ) -> CallToolResult:
        with anyio.fail_after(kw.pop("step", STEP)):
            result = await self.session.call_tool(name, arguments, **kw)
        assert result.content and result.content[0].type == "text"
        assert "Traceback" not in result.content[0].text
        return result

    async def ok(
        self, name: str, arguments: dict[str, Any] | None = None, **kw: Any
    ) -> dict[str, Any]:
        result = await self.call(name, arguments, **kw)
        assert not result.is_error, result.content[0].text
        data = result.structured_content
        assert isinstance(data, dict)
        # What the MCP client got is exactly a tools.call result.
        Draft202012Validator(tools.OUTPUT_SCHEMAS[name]).validate(data)
        return data

    async def err(self, name: str, arguments: Any, code: str, **kw: Any) -> dict[str, Any]:
        """A tool error: ``isError``, no structured content (docs/mcp.md), and
        the text ``CODE: message[ (field x)]``, returned parsed."""
        result = await self.call(name, arguments, **kw)
        assert result.is_error, result.content[0].text
        assert result.structured_content is None
        error = parse_error_text(result.content[0].text)
        assert error["code"] == code, result.content[0].text
        return error

    async def run(self, command: str, **args: Any) -> dict[str, Any]:
        res = await self.ok("bash_exec", {"command": command, "wait_ms": 30_000, **args})
        assert res["status"] != "running", res
        return res


ERROR_TEXT = re.compile(r"^([A-Z][A-Z_]*): (.*?)(?: \(field ([^()]+)\))?$", re.S)


def parse_error_text(text: str) -> dict[str, Any]:
    """``CODE: message (field x)`` as ``{"code", "message"[, "field"]}``; the
    code is one of the stable codes of the tools."""
    m = ERROR_TEXT.match(text)
    assert m, text
    error = {"code": m.group(1), "message": m.group(2)}
    if m.group(3):
        error["field"] = m.group(3)
    Draft202012Validator(tools.ERROR_RESULT).validate({"error": error})
    return error


class Recording:
    """A client transport whose read stream keeps every message received."""

    def __init__(self, inner: Any, seen: list[str] | None) -> None:
        self._inner = inner
        self._seen = seen

    async def __aenter__(self) -> Any:
        read, write = await self._inner.__aenter__()
        if self._seen is not None:
            read = RecordingStream(read, self._seen)
        return read, write

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)


class RecordingStream:
    """The client's read stream, keeping the JSON of every message received
    (to prove a secret is in none of them)."""

    def __init__(self, inner: Any, seen: list[str]) -> None:
        self._inner = inner
        self._seen = seen

    async def receive(self) -> Any:
        message = await self._inner.receive()
        inner = getattr(message, "message", None)
        self._seen.append(inner.model_dump_json() if inner is not None else repr(message))
        return message

    def __aiter__(self) -> RecordingStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def __aenter__(self) -> RecordingStream:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@asynccontextmanager
async def mcp_server(
    env: ServerEnv,
    *args: str,
    client: str = "pytest agent",
    elicitation_callback: Any = None,
    received: list[str] | None = None,
    extra_env: dict[str, str] | None = None,
    version: str = HANDSHAKE,
    extensions: list[ClientExtension] | None = None,
) -> AsyncIterator[Mcp]:
    """``dsh-magics mcp *args`` on stdio, as client ``client``, speaking
    protocol ``version``: 2026-07-28 through the SDK's ``Client()`` in its
    default mode (``server/discover``; ``extensions`` declared per request),
    a handshake revision through ``ClientSession`` and ``initialize``.
    ``elicitation_callback`` declares elicitation (form and URL mode),
    ``received`` collects every message the client got, ``extra_env`` adds
    to the server's environment."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "dsh_magics.cli", "mcp", *args],
        env={**env.vars, **(extra_env or {})},
        cwd=env.cwd,
    )
    info = Implementation(name=client, version="0")
    with open(env.log, "a", encoding="utf-8") as errlog:
        transport = Recording(stdio_client(params, errlog=errlog), received)
        if version == MODERN:
            async with Client(
                cast(Any, transport),
                client_info=info,
                elicitation_callback=elicitation_callback,
                extensions=extensions,
                cache=None,
            ) as modern:
                assert modern.protocol_version == MODERN
                yield Mcp(modern, None, MODERN)
            return
        async with transport as (read, write), ClientSession(
            read, write, client_info=info, elicitation_callback=elicitation_callback
        ) as session:
            with anyio.fail_after(STEP):
                init = await _initialize(session, version, info, elicitation_callback is not None)
            yield Mcp(session, init, version)


async def _initialize(
    session: ClientSession, version: str, info: Implementation, elicits: bool
) -> InitializeResult:
    """The handshake, proposing ``version`` (``initialize()`` proposes the latest)."""
    if version == HANDSHAKE:
        return await session.initialize()
    elicitation = (
        ElicitationCapability(form=FormElicitationCapability(), url=UrlElicitationCapability())
        if elicits
        else None
    )
    result = await session.send_request(
        InitializeRequest(
            params=InitializeRequestParams(
                protocol_version=version,
                capabilities=ClientCapabilities(elicitation=elicitation),
                client_info=info,
            )
        ),
        InitializeResult,
    )
    assert result.protocol_version == version
    session.adopt(result)
    await session.send_notification(InitializedNotification())
    return result
