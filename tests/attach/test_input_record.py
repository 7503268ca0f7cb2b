"""The input record's own rules (terminal/core/input_record.py)."""

from __future__ import annotations

import ast
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from dsh_magics import jobs
from dsh_magics.terminal import Registry, Result
from dsh_magics.terminal.core.input_record import MAX_TEXT, InputLog, Typed
from dsh_magics.terminal.interaction import InputRecord
from dsh_magics.tools.results import typed_rows

from ..conftest import wait_until


def _running(reg: Registry, sid: str, label: str) -> jobs.Job | None:
    job_id = reg.info(sid).job_id
    job = reg.job(job_id) if job_id else None
    return job if job is not None and job.label == label else None


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


# -- the one write path (terminal/core/pty.py) --------------------------------
PACKAGE = Path(__file__).resolve().parent.parent.parent / "dsh_magics"


def _calls(path: Path) -> list[tuple[str, ast.Call]]:
    """Every call in ``path`` with the name of the function it is in."""
    out: list[tuple[str, ast.Call]] = []

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else where
            if isinstance(child, ast.Call):
                out.append((inner, child))
            visit(child, inner)

    visit(ast.parse(path.read_text(), str(path)), "")
    return out


def _receiver(call: ast.Call) -> str:
    func = call.func
    if not isinstance(func, ast.Attribute):
        return ""
    value = func.value
    return value.attr if isinstance(value, ast.Attribute) else value.id if isinstance(value, ast.Name) else ""


def test_every_write_to_a_terminal_goes_through_pty_write_and_says_what_it_is() -> None:
    """Bytes reach a PTY only in ``Pty.write`` (``os.write`` on a PTY's
    ``fd``, or ptyprocess's own writers, nowhere else), and every call of it
    says whether it is the engine's own line or recorded input (``typed=``).
    The input paths (the local keyboard's ``_into_job``, which its ``send`` and
    a person's keys share, and the remote keyboard's ``send``) pass a record."""
    stray: list[str] = []
    untold: list[str] = []
    for path in PACKAGE.rglob("*.py"):
        rel = str(path.relative_to(PACKAGE))
        for where, call in _calls(path):
            func = call.func
            if not isinstance(func, ast.Attribute):
                continue
            first = call.args[0] if call.args else None
            if (
                func.attr == "write" and _receiver(call) == "os" and isinstance(first, ast.Attribute)
                and first.attr == "fd" and rel != "terminal/core/pty.py"
            ):  # fmt: skip
                stray.append(f"{rel}:{call.lineno} os.write on a PTY")
            if func.attr in ("write", "send", "sendline", "sendcontrol", "sendeof") and _receiver(call) == "proc":
                stray.append(f"{rel}:{call.lineno} ptyprocess's own {func.attr}")
            if func.attr == "write" and _receiver(call) == "pty" and not any(k.arg == "typed" for k in call.keywords):
                untold.append(f"{rel}:{call.lineno} ({where})")
    assert not stray, stray
    assert not untold, f"Pty.write without typed=: {untold}"
    for rel, path_of_input in (("terminal/local/keyboard.py", "_into_job"), ("terminal/remote/keyboard.py", "send")):
        typing_calls = [
            call for where, call in _calls(PACKAGE / rel)
            if where == path_of_input and isinstance(call.func, ast.Attribute) and call.func.attr in ("write", "type")
        ]  # fmt: skip
        assert typing_calls, rel
        for call in typing_calls:
            typed = [k.value for k in call.keywords if k.arg == "typed"]
            assert typed and not (isinstance(typed[0], ast.Constant) and typed[0].value is None), (rel, call.lineno)


def test_a_typed_input_cannot_carry_secret_text() -> None:
    secret = InputRecord(source="person", at=1.0, text="hunter2", secret=True)
    with pytest.raises(ValueError, match="redacted"):
        Typed("s", "j1", secret, lambda r: None, lambda e: None)
    kept: list[InputRecord] = []
    told: list[dict[str, object]] = []
    ok = InputRecord.make("person", "hunter2", secret=True)
    typed = Typed("s", "j1", ok, kept.append, told.append)
    typed.writing()
    typed.written()
    assert kept == [ok] and ok.text == "[secret]"
    assert told == [{"type": "input", "session_id": "s", "job_id": "j1", "input": ok.to_dict()}]


@pytest.fixture(scope="module")
def reg() -> Iterator[Registry]:
    r = Registry(login=False)
    yield r
    r.close_all()


@pytest.fixture
def sid(reg: Registry) -> Iterator[str]:
    """A session of its own per run (in-process reruns share the registry), closed afterwards."""
    name = f"rec-{uuid.uuid4().hex[:8]}"
    yield name
    if reg.exists(name):
        reg.close(name)


def _awaiting(reg: Registry, sid: str, secret: bool) -> None:
    wait_until(lambda: (reg.info(sid).awaiting_input or {}).get("secret") is secret, 30.0)


def test_each_write_of_input_is_recorded_once_in_the_order_written(reg: Registry, sid: str) -> None:
    """Also the input a job ends on is in its result (the job's inputs have
    a record before its bytes go)."""
    job = reg.exec(sid, "for i in 1 2 3; do read -r x; echo \"got $x\"; done", tty=True, source="notebook")
    assert isinstance(job, jobs.Job)
    _awaiting(reg, sid, False)
    reg.send(sid, "one", source="agent", caller="claude")
    reg.type_keys(sid, "two\r", caller="attach-9")
    reg.send(sid, "three", source="panel")
    assert job.wait(30.0) and isinstance(job.result, Result)
    assert [(e["kind"], e["source"], e["caller"], e["text"]) for e in reg.inputs(sid)] == [
        ("command", "notebook", None, job.label),
        ("input", "agent", "claude", "one"),
        ("input", "person", "attach-9", "two\r"),
        ("input", "panel", None, "three"),
    ]
    assert [(i["source"], i["text"]) for i in job.result.inputs] == [("agent", "one"), ("person", "two\r"), ("panel", "three")]


def test_a_password_a_person_answers_at_their_own_prompt_is_never_recorded(reg: Registry, sid: str) -> None:
    """A person's command that asks for a password (typed at their prompt:
    ``type_keys`` on an idle terminal), answered by them: the command is in
    the record as the person's, the password nowhere (the record, the job's
    inputs, the rows ``bash_list`` shows as ``typed``)."""
    reg.exec(sid, "true", wait_ms=20_000)
    line = "read -rs -p 'Password: ' pw; echo \"n=${#pw}\""
    reg.type_keys(sid, line + "\r", caller="attach-7")  # opens the person's prompt, types the line, Enter
    job = wait_until(lambda: _running(reg, sid, line), 30.0)
    _awaiting(reg, sid, True)
    reg.type_keys(sid, "pw-Qx51-own\r", caller="attach-7")
    assert job.wait(30.0) and isinstance(job.result, Result)
    assert "n=11" in job.result.output
    record = reg.inputs(sid)
    assert ("command", "person", "attach-7", line) in [(e["kind"], e["source"], e["caller"], e["text"]) for e in record]
    assert [(e["kind"], e["text"], e["secret"]) for e in record if e["kind"] == "input"] == [("input", "[secret]", True)]
    rows = typed_rows(reg, sid)
    everything = json.dumps([record, rows, job.result.inputs])
    assert "pw-Qx51-own" not in everything
    assert any(r["kind"] == "command" and r["text"] == line for r in rows)
