"""A job that turns line editing on, over ssh (a real sshd on 127.0.0.1),
``cmd:`` and a real podman container: it ends with its own status and the
terminal works on, also after a Ctrl-C while editing is on (the local
terminal's cases: tests/terminal/test_line_editing.py)."""

from __future__ import annotations

import pytest

from dsh_magics.terminal import INTERRUPTED, Registry, Result
from tests.conftest import wait_until

CMD_TARGET = "cmd:--probe=sh bash --noprofile --norc -i"


@pytest.fixture(params=["ssh", "cmd", "podman"])
def remote(request, sshd):
    """A registry with one remote session ``r`` on each transport."""
    if request.param == "podman":
        target = request.getfixturevalue("podman_box").target
    else:
        target = sshd.target if request.param == "ssh" else CMD_TARGET
    reg = Registry(login=False)
    try:
        reg.attach("r", target=target)
        yield reg
    finally:
        reg.close_all()


def _done(reg: Registry, command: str) -> Result:
    res = reg.exec("r", command, wait_ms=20_000)
    if not isinstance(res, Result):
        reg.close("r")
        pytest.fail(f"{command!r} did not end: {res}")
    return res


@pytest.mark.parametrize("mode", ["vi", "emacs"])
def test_a_remote_job_turns_line_editing_on(remote, mode):
    res = _done(remote, f"set -o {mode}; echo after\necho line2\n(exit 3)")
    assert (res.status, res.exit_code, res.output) == ("completed", 3, "after\nline2\n")
    assert _done(remote, "echo $?").output == "3\n"
    assert _done(remote, f"[[ -o {mode} ]] && echo {mode}").output == f"{mode}\n"


def test_a_remote_job_interrupted_while_line_editing_is_on(remote):
    job = remote.exec("r", "set -o vi; echo go; sleep 30; echo never")
    wait_until(lambda: remote.result(job.id).output == "go\n", timeout=20, msg="job started")
    remote.interrupt("r")
    res = remote.wait(job.id, timeout=20)
    assert (res.status, res.exit_code) == (INTERRUPTED, 130), res
    assert _done(remote, "echo $?").output == "130\n"
    for i in range(3):
        assert _done(remote, f"echo {i}").output == f"{i}\n"
