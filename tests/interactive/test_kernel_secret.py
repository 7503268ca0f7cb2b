"""%bash_send --secret in a real kernel: the password is asked for with the
kernel's hidden stdin request, reaches the program, and shows nowhere: not in
any iopub message, not in the job's result, not in the terminal's output."""

from __future__ import annotations

import queue
from collections.abc import Iterator

import pytest

from tests.magics.kernel_support import Kernel

PASSWORD = "k3rnel-Secr3t-pw"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    k = Kernel(cwd=str(tmp_path_factory.mktemp("secret-cwd")))
    k.run("%load_ext dsh_magics")
    k.run("%config BashMagics.live_display = 'off'")
    yield k
    k.run("%bash_close --all", ok=False)
    k.shutdown()


def test_secret_is_asked_hidden_and_never_shown(kernel: Kernel) -> None:
    kernel.run("%bash_exec --tty read -s -p 'Password: ' pw; echo; echo \"len=${#pw}\"")
    ex = kernel.run("r = %bash_wait --timeout 20\nprint(r.reason, r.awaiting_input['secret'])")
    assert ex.stream().strip() == "awaiting_input True"
    msg_id = kernel.kc.execute("s = %bash_send --secret --timeout 20", allow_stdin=True)
    try:
        req = kernel.kc.get_stdin_msg(timeout=30)
    except queue.Empty:
        raise AssertionError("the kernel did not ask for the secret") from None
    assert req["msg_type"] == "input_request"
    assert req["content"]["password"] is True and req["content"]["prompt"] == "Password: "
    kernel.kc.input(PASSWORD)
    ex = kernel.finish(msg_id)
    assert ex.status == "ok", ex.text()
    out = kernel.run(
        "rd = %bash_read\n"
        "print(s.status, repr(s.output)); print([(i['text'], i['secret']) for i in s.inputs])\n"
        "print(repr(rd.text))"
    ).stream()
    assert f"len={len(PASSWORD)}" in out and "('[secret]', True)" in out
    assert all(PASSWORD not in str(m["content"]) for m in kernel.seen)
