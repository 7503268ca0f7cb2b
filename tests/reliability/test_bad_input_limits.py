"""Bad input at the edges (issue 32 §5), through the tools dispatcher, in
process and through a real terminal host: session names never reach the
file system (nothing appears outside, or inside, the host's directory but
its own files), NUL bytes in a command are refused (bash would drop them and
run another command), a 10 MB command and a 1 MB input line get a short,
clear INVALID_ARGUMENT, and after each the terminal still works."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dsh_magics.host.client import HostClient
from dsh_magics.host.runtime import HostPaths
from dsh_magics.terminal import Registry
from dsh_magics.tools import dispatch
from tests.host.conftest import stop_everything

DEADLINE_MS = 20_000
Call = Callable[..., dict[str, Any]]

# Names that would mean something to a path or a shell; none contains a
# separator, NUL or control character (those are refused, below).
ODD_NAMES = ["..", ".", "~", "~root", "-rf", "$(touch pwned)", "`touch pwned`", "a;touch pwned", "*", "NUL", "é:ü"]
REFUSED_NAMES = ["../escape", "/tmp/escape", "a\\b", "x\0y", "a\nb", "\x1b[31m", " lead"]


@pytest.fixture(scope="module")
def host_dir() -> Iterator[str]:
    d = tempfile.mkdtemp(prefix="dshh-", dir="/tmp")
    os.chmod(d, 0o700)
    old = os.environ.get("DSH_MAGICS_LOGIN")
    os.environ["DSH_MAGICS_LOGIN"] = "0"  # the host inherits it: no login profile
    try:
        yield d
    finally:
        if old is None:
            os.environ.pop("DSH_MAGICS_LOGIN", None)
        else:
            os.environ["DSH_MAGICS_LOGIN"] = old
        stop_everything(d)
        shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(params=["in-process", "host"])
def call(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Call]:
    """A dispatcher call on a registry, or on a client of a real host."""
    monkeypatch.chdir(tmp_path)  # a name that became a path relative to the cwd would show here
    engine: Any
    if request.param == "host":
        engine = HostClient(HostPaths.for_name("limits", request.getfixturevalue("host_dir")))
        engine.connect()
    else:
        engine = Registry(login=False)

    def go(name: str, args: dict[str, Any], session: str | None = "me") -> dict[str, Any]:
        return dispatch.call(name, args, caller_session=session, registry=engine)

    yield go
    engine.close_all()
    if request.param == "host":
        engine.detach()


def _works(call: Call, session: str = "me") -> None:
    res = call("bash_exec", {"command": "echo still-$((6 * 7))", "wait_ms": DEADLINE_MS}, session)
    assert (res.get("status"), res.get("output")) == ("completed", "still-42\n"), res


def _refused(res: dict[str, Any], field: str) -> dict[str, Any]:
    err = res.get("error")
    assert err is not None and err["code"] == "INVALID_ARGUMENT" and err.get("field") == field, res
    assert len(err["message"]) < 1000, "the message echoes the input back"
    return err


def test_session_names_never_reach_the_file_system(call: Call, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    host = request.node.callspec.params["call"] == "host"
    directory = request.getfixturevalue("host_dir") if host else None
    before = set(os.listdir(directory)) if directory else set()
    for name in ODD_NAMES:
        res = call("bash_exec", {"command": 'echo "$DSH_MAGICS_SESSION"', "wait_ms": DEADLINE_MS}, name)
        assert (res.get("status"), res.get("output"), res.get("session_id")) == ("completed", name + "\n", name), res
    listed = {row["session_id"] for row in call("bash_list", {}, None)["terminals"]}
    assert set(ODD_NAMES) <= listed
    for name in REFUSED_NAMES:
        _refused(call("bash_exec", {"command": "true"}, name), "caller_session")
        _refused(call("bash_exec", {"command": "true", "session_id": name}, None), "session_id")
    for name in ODD_NAMES:
        assert call("bash_close", {}, name).get("closed") == [name]
    assert list(tmp_path.iterdir()) == [], "a session name became a file in the cwd"
    if directory:
        assert set(os.listdir(directory)) == before, "the host directory changed"
    _works(call)


def test_a_nul_byte_in_a_command_is_refused(call: Call) -> None:
    err = _refused(call("bash_exec", {"command": "echo a\0b"}), "command")
    assert "NUL" in err["message"]
    # a NUL a command prints is output like any other byte (shown as nothing in text)
    res = call("bash_exec", {"command": "printf 'a\\0b' | od -An -c", "wait_ms": DEADLINE_MS})
    assert res["output"].split() == ["a", "\\0", "b"], res
    _works(call)


def test_a_10_mb_command_is_refused_shortly(call: Call) -> None:
    err = _refused(call("bash_exec", {"command": "echo " + "x" * 10_000_000}), "command")
    assert "limit" in err["message"]
    _works(call)


def test_a_1_mb_input_line_is_refused_and_the_longest_allowed_one_works(call: Call) -> None:
    job = call("bash_exec", {"command": 'read -r line; echo "got ${#line}"', "tty": True})["job_id"]
    err = _refused(call("bash_send", {"text": "y" * 1_000_000}), "text")
    assert "limit" in err["message"]
    from dsh_magics.terminal.interaction import MAX_SEND_CHARS

    sent = call("bash_send", {"text": "y" * MAX_SEND_CHARS, "wait_ms": 0})
    assert "error" not in sent, sent
    res = call("bash_wait", {"job_id": job, "timeout_ms": DEADLINE_MS})
    assert (res["status"], res["exit_code"]) == ("completed", 0) and res["output"].endswith(
        f"got {MAX_SEND_CHARS}\n"
    ), {k: v for k, v in res.items() if k != "output"}
    _works(call)
