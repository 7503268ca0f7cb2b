"""Interactive jobs over the engine contract, in-process and through the host
(``engine`` fixture): awaiting input as a state, sending text and keys, tty
jobs, secrets that never show, the record of who typed, and waits that end
on events. Real bash, real PTY, real programs (python3 REPL, getpass, read)."""

from __future__ import annotations

import json
import re
import threading
import urllib.request
from typing import Any

import pytest

from dsh_magics import jobs
from dsh_magics.errors import InvalidArgument, NoSuchSession, NotRunning, SecretInput
from dsh_magics.terminal import COMPLETED, INTERRUPTED, RUNNING, Engine, Result
from dsh_magics.terminal.core.proclayer import use_procfs

from ..conftest import Gate, wait_until

#: The portable process layer (DSH_MAGICS_PROCFS=0, macOS) sees a blocked
#: ``read`` on the terminal only; a REPL's select/poll/epoll wait is not seen.
needs_select_detection = pytest.mark.skipif(
    not use_procfs(), reason="portable layer: select/poll waits on the terminal are not detected"
)

PASSWORD = "hunter2-Zq9"


def _start(engine: Engine, session: str, command: str, **kw: Any) -> jobs.Job:
    job = engine.exec(session, command, **kw)
    assert isinstance(job, jobs.Job), f"{command!r} ended at once: {job}"
    return job


def _awaiting(engine: Engine, job: jobs.Job, timeout: float = 20) -> Result:
    res = engine.wait(job.id, timeout=timeout)
    assert res.reason == "awaiting_input", res
    assert res.awaiting_input is not None and res.status == RUNNING and not res.timed_out
    return res


# -- awaiting input ---------------------------------------------------------------
def test_a_y_n_prompt_is_awaiting_input_and_is_answered(engine: Engine) -> None:
    job = _start(engine, "c-yn", "read -p 'Continue? [y/N] ' x; echo \"got [$x]\"", tty=True)
    res = _awaiting(engine, job)
    assert res.awaiting_input == {
        "pid": res.awaiting_input["pid"],
        "name": "bash",
        "prompt": "Continue? [y/N] ",
        "secret": False,
    }
    info = engine.info("c-yn")
    assert info.awaiting_input and info.awaiting_input["prompt"] == "Continue? [y/N] "
    assert [t.awaiting_input for t in engine.list() if t.session_id == "c-yn"][0]
    sent = engine.send("c-yn", "y", wait_ms=20_000)
    assert sent.reason == "settled" and sent.status == COMPLETED and sent.exit_code == 0
    assert "got [y]" in sent.output
    final = engine.wait(job.id, timeout=20)
    # the answer shows once, where the terminal echoed it
    assert final.output == "Continue? [y/N] y\ngot [y]\n"
    assert final.awaiting_input is None
    assert [(r["source"], r["text"], r["secret"]) for r in final.inputs] == [("person", "y", False)]
    assert engine.info("c-yn").awaiting_input is None


def test_a_program_opening_the_terminal_is_answered_without_tty(engine: Engine) -> None:
    job = _start(engine, "c-devtty", "read -p 'name? ' n </dev/tty; echo \"hi $n\"")
    res = _awaiting(engine, job)
    assert res.awaiting_input["prompt"] == "name? " and res.awaiting_input["secret"] is False
    assert engine.send("c-devtty", "ada", wait_ms=20_000).status == COMPLETED
    assert engine.wait(job.id, 20).output.endswith("hi ada\n")


def test_default_stdin_is_empty_so_nothing_waits(engine: Engine) -> None:
    res = engine.exec("c-null", "read x; echo \"rc=$?\"", wait_ms=20_000)
    assert isinstance(res, Result) and res.output == "rc=1\n"


@pytest.mark.parametrize(
    "command",
    [
        "sleep 30",
        "sleep 30 | cat",
        "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); s.listen(); "
        "print(\"listening\", flush=True); s.accept()'",
    ],
    ids=["sleep", "cat-pipe", "network"],
)
def test_quiet_jobs_are_not_awaiting_input(engine: Engine, command: str) -> None:
    job = _start(engine, "c-quiet", "echo started; " + command, tty=True)
    res = engine.wait(job.id, timeout=20, idle_ms=400)
    assert res.reason == "idle" and res.awaiting_input is None, res
    assert engine.info("c-quiet").awaiting_input is None
    engine.interrupt("c-quiet")
    assert engine.wait(job.id, 20).done


# -- a REPL driven line by line -------------------------------------------------------
@needs_select_detection
def test_python_repl_driven_line_by_line(engine: Engine) -> None:
    job = _start(engine, "c-repl", "python3 -i -q", tty=True)
    first = _awaiting(engine, job)
    assert first.awaiting_input["name"].startswith("python")
    assert first.awaiting_input["prompt"] == ">>> " and first.awaiting_input["secret"] is False
    r1 = engine.send("c-repl", "x = 6 * 7", wait_ms=20_000, source="agent", caller="agent-1")
    assert r1.reason == "awaiting_input"
    r2 = engine.send("c-repl", "print(x)", wait_ms=20_000)
    assert r2.reason == "awaiting_input" and "42" in r2.output
    assert r2.output.count("print(x)") == 1  # typed input is not duplicated
    end = engine.send("c-repl", key="ctrl-d", wait_ms=20_000)
    assert end.reason == "settled" and end.status == COMPLETED and end.exit_code == 0
    final = engine.wait(job.id, 20)
    assert final.output.count("print(x)") == 1 and "42" in final.output
    rows = [(r["source"], r["caller"], r["text"], r["key"]) for r in final.inputs]
    assert rows == [
        ("agent", "agent-1", "x = 6 * 7", None),
        ("person", None, "print(x)", None),
        ("person", None, "", "ctrl-d"),
    ]
    assert all(isinstance(r["at"], float) for r in final.inputs)
    # the shell is fine afterwards, and nothing typed reached it
    after = engine.exec("c-repl", "echo ok; history | wc -l", wait_ms=20_000)
    assert isinstance(after, Result) and after.output.startswith("ok\n")


def test_keys_interrupt_and_the_job_still_settles(engine: Engine) -> None:
    job = _start(engine, "c-keys", "cat", tty=True)
    _awaiting(engine, job)
    echo = engine.send("c-keys", "hello", wait_ms=20_000, enter=True)
    assert echo.output.count("hello") == 2  # echoed once by the terminal, once by cat
    res = engine.send("c-keys", key="ctrl-c", wait_ms=20_000)
    assert res.done and res.status == INTERRUPTED
    assert engine.exec("c-keys", "echo fine", wait_ms=20_000).output == "fine\n"  # type: ignore[union-attr]


def test_interrupt_of_a_tty_job(engine: Engine) -> None:
    job = _start(engine, "c-int", "python3 -c 'import time; print(\"go\", flush=True); time.sleep(60)'", tty=True)
    engine.wait(job.id, 20, until="go")
    engine.interrupt("c-int")
    assert engine.wait(job.id, 20).done


def test_type_ahead_nobody_read_never_becomes_a_command(engine: Engine, tmp_path) -> None:
    job = _start(engine, "c-ahead", "echo started; sleep 30", tty=True)
    engine.wait(job.id, 20, until="started")
    engine.send("c-ahead", f"touch {tmp_path}/leaked", wait_ms=0)
    engine.interrupt("c-ahead")
    engine.wait(job.id, 20)
    assert engine.exec("c-ahead", "echo next", wait_ms=20_000).output == "next\n"  # type: ignore[union-attr]
    assert not (tmp_path / "leaked").exists()


# -- secrets -----------------------------------------------------------------------
@pytest.mark.parametrize(
    "command,tty",
    [
        ("read -s -p 'Password: ' pw; echo; echo \"len ${#pw}\"", True),
        ("python3 -c 'import getpass; p = getpass.getpass(\"Password: \"); print(\"len\", len(p))'", False),
    ],
    ids=["read-s", "getpass"],
)
def test_a_password_prompt_is_secret_and_only_a_person_answers(
    engine: Engine, command: str, tty: bool
) -> None:
    events: list[dict[str, Any]] = []
    unsubscribe = engine.subscribe(events.append)
    try:
        job = _start(engine, "c-secret", command, tty=tty)
        res = _awaiting(engine, job)
        assert res.awaiting_input["secret"] is True and res.awaiting_input["prompt"] == "Password: "
        with pytest.raises(SecretInput) as e:
            engine.send("c-secret", PASSWORD, source="agent", caller="agent-1", allow_secret=False)
        assert e.value.code == "SECRET_INPUT" and "person" in e.value.message
        sent = engine.send("c-secret", PASSWORD, wait_ms=20_000, secret=True)
        assert sent.status == COMPLETED and f"len {len(PASSWORD)}" in sent.output
        final = engine.wait(job.id, 20)
        assert [(r["text"], r["secret"]) for r in final.inputs] == [("[secret]", True)]
        wait_until(lambda: any(ev.get("type") == "job_done" and ev.get("job_id") == job.id for ev in events), 10)
    finally:
        unsubscribe()
    seen = [
        final.output,
        json.dumps([r for r in final.inputs]),
        "\n".join(engine.read("c-secret").lines),
        engine.read("c-secret").partial,
        json.dumps(events, default=str),
    ]
    assert not any(PASSWORD in s for s in seen)


def test_echo_is_off_between_jobs_and_on_during_them(engine: Engine) -> None:
    res = engine.exec("c-echo", "stty -a </dev/tty | tr ' ' '\\n' | grep -x -e echo -e -echo", wait_ms=20_000)
    assert isinstance(res, Result) and res.output == "echo\n"
    # our own lines never show, before or after
    assert engine.exec("c-echo", "echo one", wait_ms=20_000).output == "one\n"  # type: ignore[union-attr]
    assert engine.read("c-echo").lines[-1] == "one"


# -- errors ------------------------------------------------------------------------
def test_send_needs_a_running_job(engine: Engine) -> None:
    with pytest.raises(NoSuchSession):
        engine.send("c-nosuch", "x")
    engine.exec("c-idle", "true", wait_ms=20_000)
    with pytest.raises(NotRunning) as e:
        engine.send("c-idle", "rm -rf /tmp/x")
    assert e.value.code == "NOT_RUNNING"
    with pytest.raises(InvalidArgument) as bad:
        engine.send("c-idle", key="f13")
    assert bad.value.details.get("field") == "key"


# -- waits that end on events ---------------------------------------------------------
def test_wait_until_a_server_is_ready_and_read_its_port(engine: Engine) -> None:
    job = _start(engine, "c-http", "python3 -m http.server 0 --bind 127.0.0.1")
    try:
        res = engine.wait(job.id, timeout=30, until=r"Serving HTTP")
        assert res.reason == "matched" and res.status == RUNNING and not res.timed_out
        port = int(re.search(r"port (\d+)", res.match_text or "").group(1))  # type: ignore[union-attr]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as page:
            assert page.status == 200
    finally:
        engine.interrupt("c-http")
        engine.wait(job.id, 20)


def test_wait_reasons_and_bad_regex(engine: Engine) -> None:
    job = _start(engine, "c-reasons", "echo a; sleep 30")
    assert engine.wait(job.id, timeout=0.2, until="never", on_input=False).reason in ("timeout", "idle")
    assert engine.wait(job.id, timeout=20, idle_ms=200).reason == "idle"
    with pytest.raises(InvalidArgument) as e:
        engine.wait(job.id, timeout=1, until="(")
    assert e.value.details.get("field") == "until"
    engine.interrupt("c-reasons")
    assert engine.wait(job.id, timeout=20).reason == "settled"


def test_a_wait_in_another_thread_wakes_when_input_is_awaited(engine: Engine, gate: Gate) -> None:
    job = _start(engine, "c-wake", f"{gate.shell}; read -p 'ok? ' x; echo $x", tty=True)
    out: list[Result] = []
    t = threading.Thread(target=lambda: out.append(engine.wait(job.id, timeout=30)))
    t.start()
    gate.open()  # the prompt comes after the wait began
    t.join(30)
    assert out and out[0].reason == "awaiting_input"
    engine.send("c-wake", "yes", wait_ms=20_000)
    assert engine.wait(job.id, 20).output.endswith("yes\n")


def test_allow_unknown_prompt_is_carried_and_changes_nothing_where_prompts_are_seen(engine: Engine) -> None:
    job = _start(engine, "c-unknown", "read -p 'name? ' n; echo \"hi $n\"", tty=True)
    res = _awaiting(engine, job)
    assert res.awaiting_input["secret"] is False
    out = engine.send(
        "c-unknown", "ada", wait_ms=20_000, source="agent", caller="agent-1", allow_secret=False,
        allow_unknown_prompt=True,
    )
    assert out.status == COMPLETED and engine.wait(job.id, 20).output.endswith("hi ada\n")
    assert engine.info("c-unknown").awaiting_input_unavailable is None
