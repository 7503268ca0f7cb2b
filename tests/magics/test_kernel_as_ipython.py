"""The magics as an IPython user expects them, in a real ipykernel (jupyter_client):
options read like a shell's and never guessed, waits that say why they returned,
failures that stop a Run All, and Python values on request (issue 36)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.magics.kernel_support import Kernel, idle_terminals, loaded_kernel

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
    setup = "%load_ext dsh_magics\n%config BashMagics.default_session = 'as-ipython'"
    with loaded_kernel(str(tmp_path_factory.mktemp("kernel-cwd")), setup) as k:
        yield k


@pytest.fixture(autouse=True)
def _terminals_idle_after_each_test(kernel: Kernel) -> Iterator[None]:
    """A failing test must not leave a job running into the next one."""
    yield
    idle_terminals(kernel)


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


def test_idle_is_seconds_and_send_takes_no_wait_prefix(kernel: Kernel) -> None:
    """Finding 1's other two: ``--idle 5`` was read as 5 ms (the wait returned
    after the first line, in the job's half-second pause), and ``%bash_send
    --wait 5`` as ``--wait-ms``."""
    kernel.run("%bash_exec echo a; sleep 0.5; echo b; sleep 30")
    got = _values(kernel, "r = %bash_wait --idle 5 --timeout 60", "[r.reason, r.output]")
    assert got == ["idle", "a\nb\n"]
    ex = kernel.run("%bash_send --wait 5 y", ok=False)
    assert ex.status == "error"
    assert "unknown option --wait" in ex.text() and "Traceback" not in ex.text()


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


# -- waits -------------------------------------------------------------------
def test_reason_is_always_set(kernel: Kernel) -> None:
    kernel.run("%bash_exec sleep 30")
    assert _values(kernel, "r = %bash_wait --timeout 0.2", "[r.reason, r.timed_out]") == ["timeout", True]
    kernel.run("%bash_interrupt")
    kernel.run("%bash_exec echo done")
    assert _values(kernel, "r = %bash_wait", "[r.reason, r.ok]") == ["settled", True]
    assert _values(kernel, "r = %bash_exec --timeout 10 true", "r.reason") == "settled"
    assert _values(kernel, "r = %bash_exec --wait true", "r.reason") == "settled"
    kernel.run("%bash_exec sleep 1; echo ready; sleep 30")
    assert _values(kernel, "r = %bash_wait --idle 0.3 --timeout 20", "r.reason") == "idle"


def test_rerunning_an_until_cell_returns_the_match_it_saw(kernel: Kernel) -> None:
    """The second run used to hang (the line had been returned once)."""
    kernel.run("%bash_exec echo 'Serving HTTP on 0.0.0.0'; sleep 60")
    cell = "r = %bash_wait --until 'Serving HTTP' --timeout 30"
    first = _values(kernel, cell, "[r.reason, r.match_line, r.match_text, r.status]")
    assert first == ["until", first[1], "Serving HTTP on 0.0.0.0", "running"]
    again = _values(kernel, cell.replace("30", "5"), "[r.reason, r.match_line, r.match_text, r.timed_out]")
    assert again == ["until", first[1], "Serving HTTP on 0.0.0.0", False]


# -- failures ----------------------------------------------------------------
FAILING = "echo built; echo 'error: boom'; (exit 2)"


@pytest.mark.parametrize(
    ("cell", "kept"),
    [
        (f"%bash_exec --wait {FAILING}", f"r = %bash_exec --wait --no-raise-error {FAILING}"),
        (
            "%%bash_exec --wait\n" + FAILING.replace("; ", "\n"),
            "%%bash_exec --wait --no-raise-error\n" + FAILING.replace("; ", "\n"),
        ),
        (f"%bash_exec {FAILING}\n%bash_wait", f"%bash_exec {FAILING}\nr = %bash_wait --no-raise-error"),
        (f"%bash_exec --timeout 20 {FAILING}", f"r = %bash_exec --timeout 20 --no-raise-error {FAILING}"),
    ],
)
def test_a_failed_job_stops_run_all_with_one_line(kernel: Kernel, cell: str, kept: str) -> None:
    ex = kernel.run(cell, ok=False)
    assert ex.status == "error"
    [err] = ex.of_type("error")
    assert err["content"]["ename"] == "JobFailed"
    assert len(err["content"]["traceback"]) == 1, err["content"]["traceback"]
    line = err["content"]["traceback"][0]
    assert "exit code 2" in line and "error: boom" in line and "\n" not in line
    assert kernel.run(kept).status == "ok"  # --no-raise-error: Run All carries on


def test_stop_during_a_wait_interrupts_the_job_and_stops_run_all(kernel: Kernel) -> None:
    mid = kernel.submit("%bash_exec --wait echo started-$((6*7)); sleep 300")
    kernel.collect_until(
        lambda m: m["parent_header"].get("msg_id") == mid
        and m["msg_type"] in ("display_data", "update_display_data")
        and "started-42" in m["content"]["data"]["text/plain"]
    )
    kernel.km.interrupt_kernel()
    ex = kernel.finish(mid)
    assert ex.status == "error"
    [err] = ex.of_type("error")
    assert err["content"]["ename"] == "JobFailed" and "interrupted" in err["content"]["traceback"][0]
    assert "Interrupted: sent Ctrl-C" in ex.stream()


def test_no_raise_error_returns_the_failed_result(kernel: Kernel) -> None:
    got = _values(kernel, "r = %bash_exec --wait --no-raise-error (exit 4)", "[r.ok, r.exit_code]")
    assert got == [False, 4]
    kernel.run("%bash_exec (exit 5)")
    assert _values(kernel, "r = %bash_wait --no-raise-error", "[r.ok, r.exit_code]") == [False, 5]


# -- Python values on request ------------------------------------------------
def test_expand_puts_python_values_in_and_leaves_dollar_to_bash(kernel: Kernel, tmp_path) -> None:
    f = tmp_path / "three lines.txt"
    f.write_text("a\nb\nc\n")
    kernel.run(f"path = {str(f)!r}\nn = 2")
    got = _values(
        kernel,
        "r = %bash_exec -e --timeout 20 wc -l < '{path}'; echo {n * 21} $((n+1)) ${{HOME:+home}}",
        "r.output",
    )
    assert got == "3\n42 1 home\n"
    # off by default: braces are bash's
    assert _values(kernel, "r = %bash_exec --timeout 20 echo {n}", "r.output") == "{n}\n"
    ex = kernel.run("%bash_exec -e echo {no_such_name}", ok=False)
    assert "INVALID_ARGUMENT: --expand: NameError" in ex.text() and "Traceback" not in ex.text()
