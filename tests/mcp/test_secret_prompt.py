"""A person answers the agent's password prompt through the MCP client: URL-mode
elicitation to a one-time page on 127.0.0.1 (dsh_magics/answer/page.py), and
``dsh-magics answer`` when the client cannot ask. The page's tests run in both
modes: terminals in a host (the host serves the page) and ``--in-process``.

The client here is the Python SDK's, with an elicitation callback that plays
the person: it opens the link and posts the answer.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import sys
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode, urlsplit

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
)

from dsh_magics.mcp.elicit import ANSWERED_NOTE

from ..conftest import wait_until
from .conftest import MODERN, STEP, Mcp, ServerEnv, mcp_server

pytestmark = pytest.mark.anyio


@pytest.fixture(params=["host", "in-process"])
def mode(request: pytest.FixtureRequest) -> tuple[str, ...]:
    """The server's arguments: terminals in a host, or in the server itself."""
    return () if request.param == "host" else ("--in-process",)

SECRET = "hunter2-Qx7#not-for-models"
CHROMIUM = "/usr/bin/chromium"
# The command checks the answer by its hash: the command's own text is in the
# input record (bash_list's ``typed``), so it must not carry the secret.
PROMPT_CMD = (
    "read -r -s -p 'Password for deploy: ' pw; echo; echo \"len ${#pw}\"; "
    "[ \"$(printf %s \"$pw\" | sha256sum | cut -c1-64)\" = "
    f"'{hashlib.sha256(SECRET.encode()).hexdigest()}' ] && echo match"
)


def request(
    url: str, method: str = "GET", body: dict[str, str] | None = None, **headers: str
) -> tuple[int, str, dict[str, str]]:
    """One HTTP request with exactly these headers (Host defaults to the URL's)."""
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=STEP)
    data = urlencode(body).encode() if body is not None else None
    hdrs = {"Host": parts.netloc, **{k.replace("_", "-"): v for k, v in headers.items()}}
    if data is not None:
        hdrs.setdefault("Content-Type", "application/x-www-form-urlencoded")
    try:
        conn.request(method, parts.path, body=data, headers=hdrs)
        resp = conn.getresponse()
        return resp.status, resp.read().decode(), {k.lower(): v for k, v in resp.getheaders()}
    finally:
        conn.close()


def refused(url: str) -> bool:
    """Nothing answers this link any more (closed port, or 410 Gone)."""
    try:
        status, _, _ = request(url)
    except OSError:
        return True
    return status == 410


class Person:
    """The elicitation callback: records each request, then acts."""

    def __init__(self, act: Callable[[ElicitRequestURLParams], Any]) -> None:
        self.asked: list[ElicitRequestURLParams] = []
        self.act = act

    async def __call__(self, context: Any, params: Any) -> ElicitResult:
        assert isinstance(params, ElicitRequestURLParams), params
        self.asked.append(params)
        return await anyio.to_thread.run_sync(self.act, params)


def answer_at(params: ElicitRequestURLParams) -> ElicitResult:
    status, page, headers = request(params.url)
    assert status == 200 and "Password for deploy: " in page, page
    assert not any(h.startswith("access-control-") for h in headers)
    status, page, _ = request(params.url, "POST", {"secret": SECRET}, Origin=f"http://{urlsplit(params.url).netloc}")
    assert status == 200 and "Sent to job" in page, page
    return ElicitResult(action="accept")


async def start_prompt(m: Mcp) -> str:
    started = await m.ok("bash_exec", {"command": PROMPT_CMD, "tty": True})
    return str(started["job_id"])


def assert_secret_nowhere(env: ServerEnv, received: list[str]) -> None:
    assert received and not any(SECRET in msg for msg in received)
    assert SECRET not in env.log_text()
    for root, _dirs, files in os.walk(env.host_dir):
        for name in files:
            try:
                with open(os.path.join(root, name), "rb") as f:
                    assert SECRET.encode() not in f.read(), name
            except OSError:
                pass


# ---------------------------------------------------------------------------
async def test_a_person_answers_through_the_link(server_env: ServerEnv, mode: tuple[str, ...]) -> None:
    person = Person(answer_at)
    received: list[str] = []
    async with mcp_server(server_env, *mode, elicitation_callback=person, received=received) as m:
        job = await start_prompt(m)
        waiting = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000})
        # the wait came back because the job asks for a password; a person was asked
        assert waiting["awaiting_input"]["secret"] is True and waiting["status"] == "running"
        assert len(person.asked) == 1
        url = person.asked[0].url
        assert urlsplit(url).hostname == "127.0.0.1" and len(urlsplit(url).path.rsplit("/", 1)[1]) >= 22
        assert "asks for a password" in person.asked[0].message and job in person.asked[0].message
        assert "a person answered the password prompt" in waiting["note"]
        done = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000, "on_input": False})
        assert done["status"] == "completed" and done["output"].endswith("len 26\nmatch\n"), done
        (typed,) = done["inputs"]
        assert (typed["source"], typed["text"], typed["secret"]) == ("person", "[secret]", True)
        # the link was single use, and nothing listens any more
        wait_until(lambda: refused(url), STEP, msg="the page still answers")
        again = await m.call("bash_wait", {"job_id": job})
        assert "answered" not in again.content[0].text  # said once
    assert len(person.asked) == 1
    assert_secret_nowhere(server_env, received)


async def test_wrong_reused_foreign_and_expired_links_are_refused(server_env: ServerEnv, mode: tuple[str, ...]) -> None:
    links: list[str] = []

    def keep(params: ElicitRequestURLParams) -> ElicitResult:
        links.append(params.url)
        return ElicitResult(action="accept")

    async with mcp_server(server_env, *mode, elicitation_callback=Person(keep)) as m:
        job = await start_prompt(m)
        first = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000})
        assert "one-time link" in first["note"]
        (url,) = links
        parts = urlsplit(url)
        base = f"http://{parts.netloc}"
        # a wrong token, a foreign Host (DNS rebinding), a foreign Origin, other methods
        assert request(base + "/answer/" + "A" * 22)[0] == 404
        assert request(url[:-1] + ("B" if url[-1] != "B" else "C"), "POST", {"secret": "x"})[0] == 404
        assert request(url, Host=f"evil.example:{parts.port}")[0] == 421
        assert request(url, "POST", {"secret": "x"}, Host=f"localhost:{parts.port}")[0] == 421
        assert request(url, "POST", {"secret": "x"}, Origin="http://evil.example")[0] == 403
        for method in ("OPTIONS", "PUT", "DELETE"):
            status, _, headers = request(url, method, Origin="http://evil.example")
            assert status == 405 and not any(h.startswith("access-control-") for h in headers)
        # none of that reached the job
        still = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000})
        assert still["status"] == "running" and still["awaiting_input"]["secret"] is True
        assert "inputs" not in still
        # a later result asks nobody again for the same prompt
        assert "one-time link" in still["note"] and len(links) == 1
        # the job stops waiting: the link expires, nothing listens
        await m.ok("bash_interrupt", {})
        wait_until(lambda: refused(url), STEP, msg="the page outlived its prompt")
        ended = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000})
        assert ended["status"] == "interrupted" and "inputs" not in ended


async def test_a_reused_token_is_refused(server_env: ServerEnv, mode: tuple[str, ...]) -> None:
    replies: list[tuple[int, int]] = []

    def twice(params: ElicitRequestURLParams) -> ElicitResult:
        first = request(params.url, "POST", {"secret": SECRET})[0]
        try:
            second = request(params.url, "POST", {"secret": "second"})[0]
        except OSError:
            second = 0  # nothing listens any more
        replies.append((first, second))
        return ElicitResult(action="accept")

    async with mcp_server(server_env, *mode, elicitation_callback=Person(twice)) as m:
        job = await start_prompt(m)
        await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000})
        done = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000, "on_input": False})
        assert done["output"].endswith("match\n") and len(done["inputs"]) == 1
    assert replies == [(200, 410)] or replies == [(200, 0)]


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_declining_keeps_the_job_waiting(server_env: ServerEnv, mode: tuple[str, ...], action: str) -> None:
    links: list[str] = []

    def no(params: ElicitRequestURLParams) -> ElicitResult:
        links.append(params.url)
        return ElicitResult(action=action)  # type: ignore[arg-type]

    async with mcp_server(server_env, *mode, elicitation_callback=Person(no)) as m:
        job = await start_prompt(m)
        res = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000})
        assert res["status"] == "running" and res["awaiting_input"]["secret"] is True
        word = "declined" if action == "decline" else "dismissed"
        assert f"the person {word}" in res["note"] and "bash_interrupt" in res["note"]
        text = (await m.call("bash_wait", {"job_id": job, "timeout_ms": 30_000})).content[0].text
        assert f"the person {word}" in text
        assert refused(links[0])  # nothing listens
        assert len(links) == 1
        await m.ok("bash_interrupt", {})
        ended = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000})
        assert ended["status"] == "interrupted"


async def test_without_url_elicitation_the_result_says_how_a_person_answers(
    server_env: ServerEnv,
) -> None:
    async with mcp_server(server_env) as m:  # a client without elicitation
        job = await start_prompt(m)
        res = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000})
        how = "`dsh-magics answer mcp-pytest-agent`"
        assert how in res["note"] and "%bash_panel --session mcp-pytest-agent" in res["note"]
        err = await m.err("bash_send", {"text": "guess"}, "SECRET_INPUT")
        assert how in err["message"]
        # a person at a terminal answers it
        answered = await anyio.to_thread.run_sync(_answer_in_a_pty, server_env, "mcp-pytest-agent")
        assert "sent to job" in answered and SECRET not in answered
        done = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000, "on_input": False})
        assert done["output"].endswith("match\n")
        (typed,) = done["inputs"]
        assert (typed["source"], typed["text"]) == ("person", "[secret]")
    assert SECRET not in server_env.log_text()


def _answer_in_a_pty(env: ServerEnv, session: str) -> str:
    """``dsh-magics answer SESSION`` in a real terminal, a person typing."""
    import pexpect

    child = pexpect.spawn(
        sys.executable,
        ["-m", "dsh_magics.cli", "answer", session],
        env={**os.environ, **env.vars},
        encoding="utf-8",
        timeout=STEP,
    )
    try:
        child.expect("Password for deploy: ")
        child.expect(r"answer \(hidden")
        child.sendline(SECRET)
        child.expect(pexpect.EOF)
        return str(child.before)
    finally:
        child.close()


async def test_in_process_without_url_elicitation_says_no_one_can_reach_it(
    server_env: ServerEnv,
) -> None:
    async with mcp_server(server_env, "--in-process") as m:
        job = await start_prompt(m)
        res = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000})
        assert "--in-process" in res["note"] and "bash_interrupt" in res["note"]
        await m.ok("bash_interrupt", {})
        await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000})


async def test_a_person_types_the_password_in_chromium(server_env: ServerEnv, mode: tuple[str, ...]) -> None:
    """The page in a real browser (Debian's Chromium through Playwright)."""
    pytest.importorskip("playwright")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no browser at {CHROMIUM}")
    seen: dict[str, str] = {}

    def in_browser(params: ElicitRequestURLParams) -> ElicitResult:
        # Playwright's sync API on this worker thread, never the test's event loop.
        from playwright.sync_api import sync_playwright

        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
            try:
                page = browser.new_page()
                page.goto(params.url)
                seen["prompt"] = page.inner_text("#prompt")
                assert page.get_attribute("#secret", "type") == "password"
                page.click("#secret")
                page.keyboard.type(SECRET)
                page.click("#send")
                page.wait_for_selector("#message", timeout=STEP * 1000)
                seen["message"] = page.inner_text("#message")
                seen["html"] = page.content()
            finally:
                browser.close()
        return ElicitResult(action="accept")

    received: list[str] = []
    async with mcp_server(
        server_env, *mode, elicitation_callback=Person(in_browser), received=received
    ) as m:
        job = await start_prompt(m)
        await m.ok("bash_wait", {"job_id": job, "timeout_ms": 60_000}, step=2 * STEP)
        done = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000, "on_input": False})
        assert done["output"].endswith("len 26\nmatch\n"), done
    assert seen["prompt"] == "Password for deploy: "
    assert seen["message"].startswith(f"Sent to job {job}")
    assert SECRET not in seen["html"]
    assert_secret_nowhere(server_env, received)


async def test_the_agent_is_not_held_by_a_client_that_has_not_replied(server_env: ServerEnv, mode: tuple[str, ...]) -> None:
    """The person answers at the link while the client's dialog is still open:
    the agent's call returns as soon as the page has its answer."""
    release = threading.Event()

    def answer_then_hold(params: ElicitRequestURLParams) -> ElicitResult:
        status, _, _ = request(params.url, "POST", {"secret": SECRET})
        assert status == 200
        release.wait(STEP)  # the client replies only after the agent's call returned
        return ElicitResult(action="accept")

    async with mcp_server(server_env, *mode, elicitation_callback=Person(answer_then_hold)) as m:
        job = await start_prompt(m)
        try:
            # (a call held until the client replies would hit this step's bound)
            waiting = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000}, step=STEP / 3)
            assert "a person answered the password prompt" in waiting["note"]
            assert not release.is_set()
        finally:
            release.set()
        done = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000, "on_input": False})
        assert done["output"].endswith("match\n")


def _listening_inode(port: int) -> int | None:
    """The socket inode listening on 127.0.0.1:``port`` (from /proc/net/tcp)."""
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            local, state, inode = fields[1], fields[3], int(fields[9])
            if state == "0A" and local == f"0100007F:{port:04X}":
                return inode
    return None


def _tcp_inodes() -> set[int]:
    out = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            next(f)
            out.update(int(line.split()[9]) for line in f)
    return out


def _socket_inodes(pid: int) -> set[int]:
    """Inodes of the sockets process ``pid`` holds open."""
    out = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            out.add(int(target[8:-1]))
    return out


def _cmdline(pid: int) -> list[str]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [a.decode(errors="replace") for a in f.read().split(b"\0")]
    except OSError:
        return []


async def test_with_a_host_the_host_process_serves_the_page(server_env: ServerEnv) -> None:
    """The process that owns the terminal serves the page: the listening
    socket is the host's, and the MCP server holds no TCP socket at all, so
    the person's answer cannot pass through it."""
    from dsh_magics.host import HostPaths

    seen: dict[str, Any] = {}

    def look_then_answer(params: ElicitRequestURLParams) -> ElicitResult:
        port = int(urlsplit(params.url).port or 0)
        inode = _listening_inode(port)
        info = HostPaths.for_name("mcp", server_env.host_dir).read_info() or {}
        servers = [p for p in server_env.pids() if _cmdline(p)[1:4] == ["-m", "dsh_magics.cli", "mcp"]]
        seen.update(inode=inode, host=info.get("pid"), servers=servers)
        seen["host_sockets"] = _socket_inodes(int(info["pid"]))
        seen["server_tcp"] = {p: _socket_inodes(p) & _tcp_inodes() for p in servers}
        return answer_at(params)

    received: list[str] = []
    async with mcp_server(server_env, elicitation_callback=Person(look_then_answer), received=received) as m:
        job = await start_prompt(m)
        waiting = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000})
        assert "a person answered the password prompt" in waiting["note"]
        done = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000, "on_input": False})
        assert done["output"].endswith("len 26\nmatch\n"), done
    assert seen["inode"] is not None and len(seen["servers"]) == 1, seen
    assert seen["host"] not in seen["servers"]
    assert seen["inode"] in seen["host_sockets"], "the page's port is not the host's"
    assert seen["server_tcp"] == {seen["servers"][0]: set()}, "the MCP server holds a TCP socket"
    assert_secret_nowhere(server_env, received)


# ---------------------------------------------------------------------------
# 2026-07-28: no server-initiated requests; the call's result asks for the
# person (InputRequiredResult, URL mode), the client's retry continues the job.

async def test_modern_a_person_answers_and_the_retried_call_continues_the_job(
    server_env: ServerEnv, mode: tuple[str, ...]
) -> None:
    person = Person(answer_at)
    received: list[str] = []
    async with mcp_server(
        server_env, *mode, elicitation_callback=person, received=received, version=MODERN
    ) as m:
        # one call: the prompt, the person at the link, the retry, the job's end
        done = await m.ok("bash_exec", {"command": PROMPT_CMD, "tty": True, "wait_ms": 30_000})
        assert done["status"] == "completed" and done["output"].endswith("len 26\nmatch\n"), done
        assert done["note"] == ANSWERED_NOTE
        (typed,) = done["inputs"]
        assert (typed["source"], typed["text"], typed["secret"]) == ("person", "[secret]", True)
        (asked,) = person.asked
        assert urlsplit(asked.url).hostname == "127.0.0.1" and done["job_id"] in asked.message
        wait_until(lambda: refused(asked.url), STEP, msg="the page still answers")
        # the terminal goes on: the same shell runs the next command
        again = await m.run("echo next")
        assert again["output"] == "next\n"
    assert_secret_nowhere(server_env, received)
    assert not any("NoBackChannelError" in msg for msg in received)


async def test_modern_bash_wait_meets_the_prompt_and_continues(server_env: ServerEnv) -> None:
    person = Person(answer_at)
    received: list[str] = []
    async with mcp_server(server_env, elicitation_callback=person, received=received, version=MODERN) as m:
        job = await start_prompt(m)
        done = await m.ok("bash_wait", {"job_id": job, "timeout_ms": 30_000})
        assert done["status"] == "completed" and done["output"].endswith("match\n"), done
        assert ANSWERED_NOTE in done["note"] and len(person.asked) == 1
    assert_secret_nowhere(server_env, received)


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_modern_declining_keeps_the_job_waiting(server_env: ServerEnv, action: str) -> None:
    links: list[str] = []

    def no(params: ElicitRequestURLParams) -> ElicitResult:
        links.append(params.url)
        return ElicitResult(action=action)  # type: ignore[arg-type]

    async with mcp_server(server_env, elicitation_callback=Person(no), version=MODERN) as m:
        res = await m.ok("bash_exec", {"command": PROMPT_CMD, "tty": True, "wait_ms": 30_000})
        assert res["status"] == "running" and res["awaiting_input"]["secret"] is True, res
        word = "declined" if action == "decline" else "dismissed"
        assert f"the person {word}" in res["note"] and "bash_interrupt" in res["note"]
        assert refused(links[0]) and len(links) == 1
        # not asked again for the same prompt
        later = await m.ok("bash_wait", {"job_id": res["job_id"], "timeout_ms": 30_000})
        assert f"the person {word}" in later["note"] and len(links) == 1
        await m.ok("bash_interrupt", {})
        ended = await m.ok("bash_wait", {"job_id": res["job_id"], "timeout_ms": 30_000})
        assert ended["status"] == "interrupted"


async def test_modern_a_forged_foreign_or_replayed_state_is_refused(server_env: ServerEnv) -> None:
    """The state is signed with the server's key and bound to the job, the
    call and the client, and good once: a forged one, one presented by another
    client, and a second use are -32602, and none of them runs anything."""
    person = Person(lambda params: ElicitResult(action="accept"))
    async with mcp_server(server_env, elicitation_callback=person, version=MODERN) as m:
        raw = m.session.session  # the ClientSession: drive the rounds by hand
        args = {"command": PROMPT_CMD, "tty": True, "wait_ms": 30_000}
        with anyio.fail_after(STEP):
            first = await raw.call_tool("bash_exec", args, allow_input_required=True)
        assert isinstance(first, InputRequiredResult) and first.request_state
        ((key, ask),) = first.input_requests.items()
        assert isinstance(ask.params, ElicitRequestURLParams)
        url = ask.params.url
        state = first.request_state
        accept = {key: ElicitResult(action="accept")}
        body, mac = state.split(".")
        forged = [
            f"{body}.{mac[:-2]}{'AA' if mac[-2:] != 'AA' else 'BB'}",  # a wrong signature
            f"{body[:-2]}{'AA' if body[-2:] != 'AA' else 'BB'}.{mac}",  # a changed payload
            "not-a-state",
        ]
        for bad in forged:
            with pytest.raises(MCPError) as refused_err:
                await raw.call_tool("bash_exec", args, input_responses=accept, request_state=bad)
            assert refused_err.value.error.code == INVALID_PARAMS
        # another agent's server on the same host (it sees the job) with this very state
        async with mcp_server(server_env, client="intruder", version=MODERN) as other:
            with pytest.raises(MCPError) as foreign:
                await other.session.session.call_tool(
                    "bash_exec", args, input_responses=accept, request_state=state
                )
            assert foreign.value.error.code == INVALID_PARAMS
        # the same state for another call (other arguments)
        with pytest.raises(MCPError) as other_call:
            await raw.call_tool(
                "bash_exec", {**args, "wait_ms": 29_999}, input_responses=accept, request_state=state
            )
        assert other_call.value.error.code == INVALID_PARAMS
        # the person answers; the genuine retry continues the job (no command runs again)
        status, _, _ = await anyio.to_thread.run_sync(
            lambda: request(url, "POST", {"secret": SECRET})
        )
        assert status == 200
        with anyio.fail_after(STEP):
            done = await raw.call_tool("bash_exec", args, input_responses=accept, request_state=state)
        assert isinstance(done, CallToolResult) and not done.is_error
        data = done.structured_content or {}
        assert data["status"] == "completed" and data["output"].endswith("len 26\nmatch\n"), data
        assert data["output"].count("len ") == 1
        # a replay of the used state
        with pytest.raises(MCPError) as replayed:
            await raw.call_tool("bash_exec", args, input_responses=accept, request_state=state)
        assert replayed.value.error.code == INVALID_PARAMS
        # nothing else ran in the terminal
        listing = await m.ok("bash_list")
        (row,) = listing["terminals"]
        assert row["job_id"] is None and row["running"] is False


async def test_modern_without_url_elicitation_one_honest_sentence(server_env: ServerEnv) -> None:
    received: list[str] = []
    async with mcp_server(server_env, received=received, version=MODERN) as m:
        res = await m.ok("bash_exec", {"command": PROMPT_CMD, "tty": True, "wait_ms": 30_000})
        assert res["status"] == "running" and res["awaiting_input"]["secret"] is True
        note = res["note"]
        assert "`dsh-magics answer mcp-pytest-agent`" in note
        assert "`dsh-magics attach mcp-pytest-agent`" in note  # issue 31 §4
        for wrong in ("NoBackChannelError", "could not ask", "offers no URL elicitation"):
            assert wrong not in note
        assert note.count(". ") == 0  # one sentence
        answered = await anyio.to_thread.run_sync(_answer_in_a_pty, server_env, "mcp-pytest-agent")
        assert "sent to job" in answered
        done = await m.ok("bash_wait", {"job_id": res["job_id"], "timeout_ms": 30_000, "on_input": False})
        assert done["output"].endswith("match\n")
    assert_secret_nowhere(server_env, received)


async def test_a_bash_exec_wait_ends_at_a_password_prompt_in_every_version(server_env: ServerEnv) -> None:
    """A bash_exec with wait_ms does not sit out its wait at a password prompt:
    on a handshake revision it returns the waiting job after the person was
    asked (the same page, the server-initiated request)."""
    person = Person(answer_at)
    async with mcp_server(server_env, elicitation_callback=person) as m:
        with anyio.fail_after(STEP / 2):  # far less than the wait_ms
            res = await m.ok("bash_exec", {"command": PROMPT_CMD, "tty": True, "wait_ms": 120_000})
        assert res["status"] == "running" and res["awaiting_input"]["secret"] is True, res
        assert res["reason"] == "awaiting_input" and ANSWERED_NOTE in res["note"]
        assert len(person.asked) == 1
        done = await m.ok("bash_wait", {"job_id": res["job_id"], "timeout_ms": 30_000, "on_input": False})
        assert done["output"].endswith("len 26\nmatch\n")
        # a prompt for ordinary input does not end the wait (as before)
        typed = await m.ok(
            "bash_exec", {"command": "read -r -t 1 -p 'name: ' x; echo got", "tty": True, "wait_ms": 30_000}
        )
        assert typed["status"] == "completed" and typed["output"].endswith("got\n")


async def test_modern_bash_send_to_a_password_prompt_asks_a_person_instead(server_env: ServerEnv) -> None:
    """The agent's text never reaches a password prompt (SECRET_INPUT); on
    2026-07-28 the call asks for a person instead, and the retried call
    reports the job going on with the person's answer."""
    person = Person(answer_at)
    received: list[str] = []
    async with mcp_server(server_env, elicitation_callback=person, received=received, version=MODERN) as m:
        job = await start_prompt(m)
        await _until_waiting_for_a_password(m)  # (bash_list asks nobody)
        # the agent types: its text is refused, a person is asked instead
        res = await m.ok("bash_send", {"text": "guess", "wait_ms": 30_000})
        assert len(person.asked) == 1, res
        done = res if res["status"] == "completed" else await m.ok(
            "bash_wait", {"job_id": job, "timeout_ms": 30_000, "on_input": False}
        )
        assert done["output"].endswith("len 26\nmatch\n"), done
        assert "guess" not in done["output"]
        (typed,) = done["inputs"]
        assert (typed["source"], typed["text"]) == ("person", "[secret]")
    assert_secret_nowhere(server_env, received)


async def _until_waiting_for_a_password(m: Mcp) -> None:
    """Poll bash_list (which routes nothing to a person) until the caller's
    terminal shows its job waiting for a password."""
    with anyio.fail_after(STEP):
        while True:
            rows = (await m.ok("bash_list"))["terminals"]
            if any((r.get("awaiting_input") or {}).get("secret") for r in rows):
                return
            await anyio.sleep(0.05)  # the poll's interval, under the deadline above
