"""Argument parsing, help and one-line errors of the magics (in-process IPython)."""

from __future__ import annotations

import os
import time

import pytest
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from dsh_magics.notebook import magic_args
from dsh_magics.terminal import keys


@pytest.mark.parametrize(
    ("line", "session", "rest"),
    [
        ("echo hi", None, "echo hi"),
        ("--wait echo 'a  b' | tr a b", None, "echo 'a  b' | tr a b"),
        ("--session build --timeout 0.05 make -j2", "build", "make -j2"),
        ("-s 'my session' ls -la", "my session", "ls -la"),
        ('--session "my build" ls', "my build", "ls"),
        ("--session my\\ build ls", "my build", "ls"),
        ("--session=x -- -weird-command --flag", "x", "-weird-command --flag"),
        ('  --wait   printf "%s\\n" "x  y"  ', None, 'printf "%s\\n" "x  y"  '),
        ("", None, ""),
        ("--wait", None, ""),
        ("-s5 ls", "5", "ls"),
    ],
)
def test_options_are_shell_words_and_the_command_stays_verbatim(
    ip, line: str, session: str | None, rest: str
) -> None:
    args, got = magic_args.parse_with_rest(ip.find_line_magic("bash_exec"), line)
    assert (args.session, got) == (session, rest)


def test_an_exec_line_is_parsed_once_and_each_run_gets_its_own_options(ip, monkeypatch) -> None:
    """issue 34 §5: a re-run cell's %bash_exec line is not parsed again; each run gets
    its own copy of the options (a list option too), and a bad line is never kept."""
    from dsh_magics.notebook import magics as magics_module
    from dsh_magics.notebook.extension import BashMagics

    real, parsed = magics_module.parse_with_rest, []

    def counting(magic, line):  # type: ignore[no-untyped-def]
        parsed.append(line)
        return real(magic, line)

    monkeypatch.setattr(magics_module, "parse_with_rest", counting)
    m = ip.magics_manager.registry[BashMagics.__name__]
    command = f"echo $HOME {os.getpid()}-{time.monotonic_ns()}"  # a line this process has not parsed
    line = f"--on a --on b --timeout 5 {command}"
    (a1, r1), (a2, r2) = m._exec_line(line), m._exec_line(line)
    assert parsed == [line] and r1 == r2 == command
    assert vars(a1) == vars(a2) and a1 is not a2 and a1.on == ["a", "b"] and a1.on is not a2.on
    for _ in range(2):
        with pytest.raises(UsageError, match="unknown option --bogus"):
            ip.run_line_magic("bash_exec", "--bogus echo x")
    assert parsed == [line, "--bogus echo x", "--bogus echo x"]


def test_help_is_generated_from_the_real_arguments(ip) -> None:
    for name, options in {
        "bash_attach": ["--session", "--cwd", "--recreate", "--target"],
        "bash_exec": ["--session", "--timeout", "--wait"],
        "bash_wait": ["--timeout", "--idle", "job_id"],
        "bash_read": ["--session", "--lines"],
        "bash_interrupt": ["--session"],
        "bash_close": ["--session", "--all"],
        "bash_list": [],
    }.items():
        doc = ip.find_line_magic(name).__doc__
        assert doc and f"%{name}" in doc, name
        for opt in options:
            assert opt in doc, (name, opt)
    with capture_output() as cap:
        ip.run_cell("%bash_exec?")
    assert "--timeout" in cap.stdout and "Example" in cap.stdout


def test_the_key_help_lists_every_key_the_engine_knows(ip) -> None:
    doc = "".join(ip.find_line_magic("bash_send").__doc__.split())  # argparse wraps the help
    assert "".join(keys.describe_valid().split()) in doc


def test_cell_form_is_registered(ip) -> None:
    assert ip.find_cell_magic("bash_exec") is not None


@pytest.mark.parametrize(
    ("magic", "line", "needle"),
    [
        ("bash_exec", "--wait --timeout 5 echo x", "INVALID_ARGUMENT"),
        ("bash_exec", "--timeout -1 echo x", "expected seconds >= 0"),
        ("bash_exec", "--timeout soon echo x", "expected seconds"),
        ("bash_exec", "--bogus echo x", "unknown option --bogus"),
        ("bash_exec", "--session", "expects a value"),
        ("bash_exec", "--wait", "no command given"),
        ("bash_exec", "--session 'a/b' echo x", "INVALID_ARGUMENT"),
        ("bash_wait", "no-such-job-id", "NO_SUCH_JOB"),
        ("bash_wait", "--timeout -3", "INVALID_ARGUMENT"),
        ("bash_wait", "--until 'open", "No closing quotation"),
        ("bash_read", "--session never-opened-here", "NO_SUCH_SESSION"),
        ("bash_read", "--lines -1", "INVALID_ARGUMENT"),
        ("bash_close", "--all --session x", "INVALID_ARGUMENT"),
        ("bash_close", "--session never-opened-here", "NO_SUCH_SESSION"),
        ("bash_interrupt", "--session never-opened-here", "NO_SUCH_SESSION"),
        ("bash_attach", "--session x-attach --cwd /no/such/dir/anywhere", "INVALID_ARGUMENT"),
        ("bash_attach", "--session x-target --target gopher://nowhere", "INVALID_ARGUMENT"),
        ("bash_list", "extra", "takes a group id (g1), not 'extra'"),
        ("bash_send", "--wait 5 y", "unknown option --wait"),
        ("bash_exec", "-session build ls", "unknown option -session"),
        ("bash_wait", "--timeout-ms 10", "unknown option --timeout-ms"),
    ],
)
def test_bad_input_is_a_usage_error(ip, magic: str, line: str, needle: str) -> None:
    with pytest.raises(UsageError) as err:
        ip.run_line_magic(magic, line)
    assert needle in str(err.value)


def test_cell_form_rejects_a_command_on_the_first_line(ip) -> None:
    with pytest.raises(UsageError, match="cell body"):
        ip.run_cell_magic("bash_exec", "echo on-the-line", "echo in-the-body\n")


def test_busy_session_is_one_line_without_traceback(ip, session: str) -> None:
    ip.run_line_magic("bash_exec", "sleep 30")
    with capture_output() as cap:
        ip.run_cell("%bash_exec echo second")
    err = cap.stderr.strip()
    assert err.startswith("UsageError: SESSION_BUSY:"), err
    assert "\n" not in err and "Traceback" not in cap.stdout + cap.stderr
    ip.run_line_magic("bash_interrupt", "")


def test_unknown_job_in_a_cell_is_one_line(ip) -> None:
    with capture_output() as cap:
        ip.run_cell("%bash_wait bash-0000")
    assert cap.stderr.strip().startswith("UsageError: NO_SUCH_JOB:")
    assert "Traceback" not in cap.stderr


def test_the_command_reaches_bash_as_typed_without_ipython_expansion(ip) -> None:
    """IPython's ``$name``/``{expr}`` interpolation would rewrite bash's own
    syntax (``$i`` in a loop, ``$$``): %bash_exec opts out of it."""
    ip.user_ns["dsh_i"] = "from-python"
    line = "dsh_i=from-bash; echo $dsh_i '{dsh_i} $$x$$ \\(y\\)'"
    res = ip.run_cell(f"r = %bash_exec --timeout 10 {line}")
    assert res.success
    r = ip.user_ns["r"]
    assert r.command == line
    assert r.output == "from-bash {dsh_i} $$x$$ \\(y\\)\n"


@pytest.mark.parametrize(
    "magic",
    [
        "bash_attach",
        "bash_exec",
        "bash_wait",
        "bash_read",
        "bash_interrupt",
        "bash_close",
        "bash_list",
        "bash_panel",
        "bash_schema",
    ],
)
def test_every_magic_reports_bad_options_the_same_way(ip, magic: str) -> None:
    """One UsageError line, ``INVALID_ARGUMENT: %magic: ...``, from every magic."""
    with pytest.raises(UsageError) as err:
        ip.run_line_magic(magic, "--no-such-option x")
    text = str(err.value)
    assert text.startswith(f"INVALID_ARGUMENT: %{magic}: ") and "\n" not in text, text


def test_attach_target_opens_the_shell_there(ip) -> None:
    """``--target cmd:...`` runs the shell through the in-band transport; the row says so."""
    session = ip.run_line_magic("config", "BashMagics.default_session") or ""
    sid = f"{session}-target"
    info = ip.run_line_magic(
        "bash_attach", f"--session {sid} --target 'cmd:bash --noprofile --norc -i'"
    )
    try:
        assert info.target == "cmd:bash --noprofile --norc -i"
        from dsh_magics.notebook import render

        # %bash_list and the panel show where the shell runs (both use render.where)
        assert "cmd:bash --noprofile --norc -i" in render.info_text(info)
        assert "cmd:bash --noprofile --norc -i" in render.terminals_html([info])
        r = ip.run_line_magic("bash_exec", f"--session {sid} --timeout 20 echo remote-ok")
        assert r.output == "remote-ok\n" and r.exit_code == 0
    finally:
        ip.run_line_magic("bash_close", f"--session {sid}")
