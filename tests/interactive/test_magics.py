"""The interaction magics in IPython: %bash_exec --tty, %bash_send (text,
--no-enter, --key), %bash_wait --until/--idle and awaiting input; errors
are one line. --secret is tested in a real kernel (test_kernel_secret.py)."""

from __future__ import annotations

import os
import re
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell

from dsh_magics.terminal import Result, default_registry
from dsh_magics.terminal.core.proclayer import use_procfs

#: The portable process layer (DSH_MAGICS_PROCFS=0, macOS) sees a blocked
#: ``read`` on the terminal only; a REPL's select/poll/epoll wait is not seen.
needs_select_detection = pytest.mark.skipif(
    not use_procfs(), reason="portable layer: select/poll waits on the terminal are not detected"
)


@pytest.fixture(scope="module")
def ip() -> Iterator[Any]:
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "dsh_magics")
    shell.run_line_magic("config", f"BashMagics.default_session = 'ix-{os.getpid()}'")
    shell.run_line_magic("config", "BashMagics.live_display = 'off'")
    yield shell
    reg = default_registry()
    for info in reg.list():
        if info.session_id.startswith(f"ix-{os.getpid()}"):
            reg.close(info.session_id)


def line(ip: Any, magic: str, text: str) -> Any:
    return ip.run_line_magic(magic, text)


@needs_select_detection
def test_a_repl_driven_from_the_notebook(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    line(ip, "bash_exec", "--tty python3 -i -q")
    waited = line(ip, "bash_wait", "--timeout 20")
    assert isinstance(waited, Result) and waited.reason == "awaiting_input"
    assert waited.awaiting_input["prompt"] == ">>> " and "%bash_send" in (waited.note or "")
    out = line(ip, "bash_send", "--timeout 20 \"print('a' * 3)\"")
    assert out.reason == "awaiting_input" and "aaa\n>>> " in out.output
    line(ip, "bash_send", "--no-enter --timeout 0.1 x = 4")
    line(ip, "bash_send", "--timeout 20")  # just Enter
    assert "16" in line(ip, "bash_send", "--timeout 20 print(x * x)").output
    done = line(ip, "bash_send", "--key ctrl-d --timeout 20")
    assert done.status == "completed" and done.exit_code == 0
    inputs = [(r["source"], r["text"], r["key"]) for r in done.inputs]
    assert inputs == [
        ("notebook", "print('a' * 3)", None),
        ("notebook", "x = 4", None),
        ("notebook", "", None),
        ("notebook", "print(x * x)", None),
        ("notebook", "", "ctrl-d"),
    ]


def test_wait_until_a_server_says_it_serves(ip: Any) -> None:
    line(ip, "bash_exec", "python3 -m http.server 0 --bind 127.0.0.1")
    try:
        res = line(ip, "bash_wait", "--until 'Serving HTTP' --timeout 30")
        assert res.reason == "until" and res.status == "running"
        port = int(re.search(r"port (\d+)", res.match_text).group(1))  # type: ignore[union-attr]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=10) as page:
            assert page.status == 200
    finally:
        line(ip, "bash_interrupt", "")


def test_idle_and_errors_are_one_line(ip: Any) -> None:
    line(ip, "bash_exec", "echo x; sleep 30")
    assert line(ip, "bash_wait", "--idle 0.3 --timeout 20").reason == "idle"
    with pytest.raises(UsageError, match=r"^INVALID_ARGUMENT: until is not a valid regular expression"):
        line(ip, "bash_wait", "--until '(' --timeout 0.1")
    with pytest.raises(UsageError, match=r"^INVALID_ARGUMENT: key 'f13'"):
        line(ip, "bash_send", "--key f13")
    line(ip, "bash_interrupt", "")
    with pytest.raises(UsageError, match=r"^NOT_RUNNING: "):
        line(ip, "bash_send", "echo typed into nothing")
    with pytest.raises(UsageError, match=r"^NOT_RUNNING: "):
        line(ip, "bash_send", "--secret")


def test_the_input_record_names_the_notebook(ip: Any) -> None:
    """Who typed what: a command, a send and an interrupt from the magics are
    recorded with source ``notebook`` (a person at an attached terminal is
    ``person``, an agent ``agent``, the panel ``panel``)."""
    session = f"ix-{os.getpid()}"
    line(ip, "bash_exec", "--tty read -r -p 'name? ' n; echo got $n")
    assert line(ip, "bash_wait", "--timeout 20").reason == "awaiting_input"
    assert line(ip, "bash_send", "--timeout 20 ada").exit_code == 0
    line(ip, "bash_exec", "sleep 30")
    line(ip, "bash_interrupt", "")
    record = default_registry().inputs(session)
    kinds = [(e["kind"], e["source"]) for e in record[-4:]]
    assert all(source == "notebook" for _, source in kinds), record[-4:]
    assert {kind for kind, _ in kinds} >= {"command", "interrupt"}, record[-4:]
