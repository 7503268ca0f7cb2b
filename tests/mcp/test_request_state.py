"""The signed ``requestState`` of a call that asked for a person
(dsh_magics/mcp/request_state.py): good once for exactly the call and the
client it was issued to, by exactly the server that issued it."""

from __future__ import annotations

import base64
import json

import pytest

from dsh_magics.mcp.request_state import InvalidState, Issued, StateSigner

ISSUED = Issued("bash-1", "mcp-a", "nonce-1", "person-1")
ARGS = {"command": "sudo true", "wait_ms": 1000}


def test_a_state_checks_for_its_own_call_and_client() -> None:
    signer = StateSigner()
    state = signer.issue(tool="bash_exec", arguments=ARGS, client="a\nmcp-a", issued=ISSUED)
    assert signer.check(state, tool="bash_exec", arguments=dict(reversed(ARGS.items())), client="a\nmcp-a") == ISSUED


@pytest.mark.parametrize(
    "tool, arguments, client",
    [
        ("bash_wait", ARGS, "a\nmcp-a"),  # another tool
        ("bash_exec", {**ARGS, "wait_ms": 999}, "a\nmcp-a"),  # another call
        ("bash_exec", ARGS, "b\nmcp-a"),  # another client
        ("bash_exec", ARGS, "a\nmcp-b"),  # another session
    ],
)
def test_a_state_for_anything_else_is_refused(tool: str, arguments: dict, client: str) -> None:
    signer = StateSigner()
    state = signer.issue(tool="bash_exec", arguments=ARGS, client="a\nmcp-a", issued=ISSUED)
    with pytest.raises(InvalidState):
        signer.check(state, tool=tool, arguments=arguments, client=client)


def test_forged_expired_and_foreign_states_are_refused() -> None:
    signer = StateSigner()
    state = signer.issue(tool="bash_exec", arguments=ARGS, client="c", issued=ISSUED)
    body, mac = state.split(".")
    claims = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    claims["job"] = "bash-2"  # another job, the old signature
    other_body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=").decode()
    for bad in (f"{other_body}.{mac}", f"{body}.{mac[::-1]}", "x", "a.b.c", ""):
        with pytest.raises(InvalidState):
            signer.check(bad, tool="bash_exec", arguments=ARGS, client="c")
    # another server process (another key)
    with pytest.raises(InvalidState):
        StateSigner().check(state, tool="bash_exec", arguments=ARGS, client="c")
    expired = StateSigner(key=b"k" * 32, ttl_s=-1.0)
    old = expired.issue(tool="bash_exec", arguments=ARGS, client="c", issued=ISSUED)
    with pytest.raises(InvalidState):
        expired.check(old, tool="bash_exec", arguments=ARGS, client="c")
