"""The magics as an IPython user expects them, in a real ipykernel (jupyter_client):
options read like a shell's and never guessed, waits that say why they returned,
failures that stop a Run All, and Python values on request (issue 36)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.magics.kernel_support import Kernel

pytestmark = pytest.mark.kernel

MAGICS = (
    "bash_attach",
    "bash_exec",
    "bash_wait",
    "bash_send",
    "bash_read",
    "bash_screen",
    "bash_interrupt",
    "bash_close",
    "bash_list",
    "bash_panel",
    "bash_schema",
)


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    k = Kernel(cwd=str(tmp_path_factory.mktemp("kernel-cwd")))
    try:
        k.run("%load_ext dsh_magics\n%config BashMagics.default_session = 'as-ipython'")
        yield k
    finally:
        k.shutdown()


@pytest.fixture(autouse=True)
def _terminals_idle_after_each_test(kernel: Kernel) -> Iterator[None]:
    """A failing test must not leave a job running into the next one."""
    yield
    kernel.run(
        "from dsh_magics.terminal import default_registry as _reg\n"
        "for _t in _reg().list():\n"
        "    if _t.job_id:\n"
        "        _reg().interrupt(_t.session_id)\n"
        "        _reg().job(_t.job_id).wait(30)\n"
    )


def _values(kernel: Kernel, code: str, expr: str) -> object:
    """Run ``code`` then return ``expr`` evaluated in the kernel (as JSON)."""
    kernel.run(code, timeout=90)
    return json.loads(kernel.value(f"__import__('json').dumps({expr})"))


# -- arguments -------------------------------------------------------------
def test_timeout_is_seconds_and_a_prefix_is_not_an_option(kernel: Kernel) -> None:
    """``--timeout 10`` is ten seconds: a job waiting for input is reported as
    such, not as a wait that timed out after 10 ms."""
    kernel.run("%bash_exec --tty read -p 'name? ' n; echo \"hi $n\"")
    got = _values(kernel, "r = %bash_wait --timeout 10", "[r.reason, r.timed_out]")
    assert got == ["awaiting_input", False]
    ex = kernel.run("%bash_wait --timeout-m 10", ok=False)
    assert ex.status == "error"
    assert "unknown option --timeout-m" in ex.text() and "--timeout" in ex.text()
    assert "Traceback" not in ex.text()


def test_send_text_is_unquoted_as_a_shell_does(kernel: Kernel) -> None:
    kernel.run("%bash_exec --tty read -p 'answer? ' a; printf '[%s]\\n' \"$a\"")
    kernel.run("%bash_wait --timeout 10")
    assert _values(kernel, "s = %bash_send 'y'", "[s.status, s.output.splitlines()[-1]]") == [
        "completed",
        "[y]",
    ]
    kernel.run("%bash_exec --tty read -r -p 'answer? ' a; printf '[%s]\\n' \"$a\"")
    kernel.run("%bash_wait --timeout 10")
    got = _values(kernel, "s = %bash_send \"it's  \\\"quoted\\\"\"", "s.output.splitlines()[-1]")
    assert got == "[it's  \"quoted\"]"


def test_quoted_values_reach_attach_without_their_quotes(kernel: Kernel, tmp_path) -> None:
    spaced = tmp_path / "dir with space"
    spaced.mkdir()
    got = _values(
        kernel,
        f'i = %bash_attach --session "my build" --cwd "{spaced}"\n'
        f"j = %bash_attach --session my\\ build --cwd {str(spaced).replace(' ', chr(92) + ' ')}",
        "[i.session_id, i.cwd, j.session_id, j.cwd]",
    )
    assert got == ["my build", str(spaced), "my build", str(spaced)]
    kernel.run("%bash_close --session 'my build'")


@pytest.mark.parametrize("magic", MAGICS)
def test_help_works_on_every_magic(kernel: Kernel, magic: str) -> None:
    ex = kernel.run(f"%{magic} --help")
    assert ex.status == "ok"
    assert "usage" in ex.stream().lower() or f"%{magic}" in ex.stream(), ex.text()
