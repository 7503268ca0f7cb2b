"""Named keys, one-line text, and the input record (pure functions)."""

from __future__ import annotations

import pytest

from dsh_magics.errors import InvalidArgument
from dsh_magics.terminal import interaction as I


def test_named_keys_are_the_bytes_a_keyboard_sends() -> None:
    assert I.encode(key="ctrl-c") == b"\x03"
    assert I.encode(key="CTRL-D") == b"\x04"
    assert I.encode(key="ctrl-z") == b"\x1a"
    assert I.encode(key="tab") == b"\t"
    assert I.encode(key="esc") == b"\x1b"
    assert I.encode(key="up") == b"\x1b[A"
    assert I.encode(key="down") == b"\x1b[B"
    assert I.encode(key="enter") == b"\r"


def test_text_gets_enter_unless_told_not_to() -> None:
    assert I.encode("y") == b"y\r"
    assert I.encode("y", enter=False) == b"y"
    assert I.encode("") == b"\r"
    assert I.encode("y\n") == b"y\r"  # a trailing newline is the Enter
    assert I.encode("héllo") == "héllo\r".encode()


@pytest.mark.parametrize(
    "kwargs,field",
    [
        ({"key": "meta-q"}, "key"),
        ({"text": "a", "key": "tab"}, "key"),
        ({"text": "a\nb"}, "text"),
        ({"text": "x" * (I.MAX_SEND_CHARS + 1)}, "text"),
        ({"text": "", "enter": False}, "text"),
    ],
)
def test_bad_input_is_refused_with_the_field(kwargs: dict, field: str) -> None:
    with pytest.raises(InvalidArgument) as e:
        I.encode(**kwargs)
    assert e.value.code == "INVALID_ARGUMENT"
    assert e.value.details["field"] == field


def test_unknown_key_message_lists_the_keys() -> None:
    with pytest.raises(InvalidArgument, match=r"ctrl-a\.\.ctrl-z"):
        I.key_bytes("f13")


def test_record_redacts_secret_text() -> None:
    r = I.InputRecord.make("person", "hunter2", secret=True)
    assert r.text == I.REDACTED and r.secret
    assert "hunter2" not in repr(r.to_dict())
    a = I.InputRecord.make("agent", "y", secret=False, caller="agent-1")
    assert a.to_dict()["text"] == "y" and a.caller == "agent-1" and a.source == "agent"
    k = I.InputRecord.make("agent", None, secret=True, key="ctrl-c")
    assert k.key == "ctrl-c" and k.text == "" and not k.secret and not k.enter


def test_an_agent_may_press_keys_but_not_type_at_a_password_prompt() -> None:
    """SECRET_INPUT refuses an agent's text, not its named keys (one or a list)."""
    from dsh_magics.errors import SecretInput
    from dsh_magics.terminal import Registry
    from tests.conftest import wait_until

    reg = Registry(login=False)
    try:
        job = reg.exec("k-secret", "read -r -s -p 'pw: ' x; echo got ${#x}", tty=True)
        wait_until(lambda: (a := reg.info("k-secret").awaiting_input) is not None and a["secret"], 20)
        with pytest.raises(SecretInput):
            reg.send("k-secret", "hunter2", source="agent", allow_secret=False, wait_ms=0)
        reg.send("k-secret", keys=["ctrl-c"], source="agent", allow_secret=False, wait_ms=0)
        res = reg.wait(job.id, timeout=20)
        assert res.status == "interrupted", res.to_dict()
        assert "hunter2" not in repr(res.inputs)
    finally:
        reg.close_all()
