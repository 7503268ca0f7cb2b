"""The input record's own rules (terminal/core/input_record.py)."""

from __future__ import annotations

from dsh_magics.terminal.core.input_record import MAX_TEXT, InputLog


def _typed(text: str, *, secret: bool = False, job: str = "j1", source: str = "person") -> dict[str, object]:
    return {"source": source, "at": 1.0, "text": "[secret]" if secret else text, "secret": secret,
            "key": None, "caller": "attach-1", "enter": False}  # fmt: skip


def test_last_n_and_order() -> None:
    log = InputLog()
    for i in range(3):
        log.add("command", "agent", f"echo {i}")
    assert [e.text for e in log.entries(5)] == ["echo 0", "echo 1", "echo 2"]
    assert [e.text for e in log.entries(2)] == ["echo 1", "echo 2"]
    assert log.entries(0) == [] and len(log.entries()) == 3


def test_a_persons_keys_join_one_entry_and_secrets_stay_redacted() -> None:
    log = InputLog()
    log.add_input(_typed("l"), "j1")
    log.add_input(_typed("s\r"), "j1")
    log.add_input(_typed("", secret=True), "j1")
    log.add_input(_typed("", secret=True), "j1")
    log.add_input(_typed("x", source="agent"), "j1")
    assert [(e.source, e.text, e.secret) for e in log.entries()] == [
        ("person", "ls\r", False),
        ("person", "[secret]", True),
        ("agent", "x", False),
    ]
    log.add("command", "person", "y" * (MAX_TEXT * 3))
    assert len(log.entries()[-1].text) == MAX_TEXT
