"""A group's members at a password prompt over MCP (issue 35 §3): a person answers
each member through URL-mode elicitation, once per member, and the model never sees
the text. The client is the MCP Python SDK's, with an elicitation callback that plays
the person (it opens each link and posts the password), against a real server and
terminal host; the members are local terminals (a remote terminal's job is not seen
awaiting input yet: docs/remote.md).

On a handshake revision the server asks the client for each member in turn during
the group's ``bash_wait``; on 2026-07-28 each round's result is an
``InputRequiredResult`` for one member, and the client's retried call waits on the
group again and meets the next."""

from __future__ import annotations

import hashlib
from urllib.parse import urlsplit

import anyio
import pytest

from dsh_magics.mcp.elicit import ANSWERED_NOTE
from tests.conftest import wait_until
from tests.mcp.conftest import MODERN, STEP, ServerEnv, mcp_server
from tests.mcp.test_secret_prompt import SECRET, Person, answer_at, assert_secret_nowhere, refused

pytestmark = pytest.mark.anyio

#: Two members ask, one does not; each reads from its terminal, as sudo or ssh do.
ASKING = ["fanpw1", "fanpw2"]
QUIET = "fanok1"
COMMAND = (
    "case $DSH_MAGICS_SESSION in fanpw*) read -r -s -p 'Password for deploy: ' pw </dev/tty; echo; "
    "[ \"$(printf %s \"$pw\" | sha256sum | cut -c1-64)\" = "
    f"'{hashlib.sha256(SECRET.encode()).hexdigest()}' ] && echo match;; *) echo match;; esac"
)


@pytest.mark.parametrize("version", ["handshake", MODERN])
async def test_a_person_answers_each_member_once(server_env: ServerEnv, version: str) -> None:
    person = Person(answer_at)
    received: list[str] = []
    kw = {"version": MODERN} if version == MODERN else {}
    async with mcp_server(server_env, client="fanpw", elicitation_callback=person, received=received, **kw) as m:
        started = await m.ok("bash_exec", {"command": COMMAND, "targets": [*ASKING, QUIET]})
        gid = started["group_id"]
        notes: list[str] = []
        # bash_wait returns at a member's prompt (its note says a person was asked), until
        # a person was asked for each; on 2026-07-28 one call carries every round
        with anyio.fail_after(4 * STEP):
            while True:
                called = await m.call("bash_wait", {"job_id": gid, "timeout_ms": 30_000}, step=4 * STEP)
                res = called.structured_content
                assert not called.is_error and isinstance(res, dict), called.content[0].text
                notes.append(res.get("note", ""))
                if res.get("note"):  # a text-only host shows it under the merged view
                    assert f"\nnote: {res['note']}" in called.content[0].text, called.content[0].text
                if res["status"] == "done" or len(person.asked) == len(ASKING):
                    break
        done = await m.ok("bash_wait", {"job_id": gid, "timeout_ms": 60_000, "on_input": False, "detail": True})
        assert done["status"] == "done" and done["counts"] == {"completed": 3}, done
        assert "fanpw[1-2] (2)\n----------------\nPassword for deploy: \nmatch\n" in done["merged"], done["merged"]
        rows = {r["target"]: r for r in done["detail"]}
        assert all(rows[t]["exit_code"] == 0 and rows[t]["last_line"] == "match" for t in rows), rows
        # once per member: two links, each naming that member's job, each used once
        assert len(person.asked) == 2, [a.message for a in person.asked]
        asked_jobs = {j for a in person.asked for j in (rows[t]["job_id"] for t in ASKING) if j in a.message}
        assert asked_jobs == {rows[t]["job_id"] for t in ASKING}, [a.message for a in person.asked]
        assert len({a.url for a in person.asked}) == 2 and all(urlsplit(a.url).hostname == "127.0.0.1" for a in person.asked)
        for a in person.asked:
            wait_until(lambda a=a: refused(a.url), STEP, msg="a page still answers")
        said = "; ".join([*notes, done.get("note", "")])
        assert ANSWERED_NOTE in said, said
        assert any(n.startswith(f"{ASKING[0]}: ") or f"; {ASKING[0]}: " in n for n in notes + [done.get("note", "")]), notes
        # the group text a text-only host shows: the prompt, never the password
        text = (await m.call("bash_read", {"group_id": gid})).content[0].text
        assert "Password for deploy: " in text and SECRET not in text
        await m.ok("bash_close", {"all": True})
    assert_secret_nowhere(server_env, received)
