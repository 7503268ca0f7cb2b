"""Commands behave exactly as in a script, and state persists."""

from __future__ import annotations

import os
import stat

from .conftest import run


def test_heredoc_loops_pipes_quoting(reg):
    cmd = """cat <<'END'
a $NOT_EXPANDED "q" 'q'
END
for i in 1 2 3; do printf '%s-' "$i"; done; echo
echo "x y" | tr ' ' '_'
f() { echo "fn:$1"; }
f 'arg with spaces'
"""
    r = run(reg, cmd)
    assert r.output == "a $NOT_EXPANDED \"q\" 'q'\n1-2-3-\nx_y\nfn:arg with spaces\n"


def test_large_command_non_ascii_and_control_bytes(reg):
    big = "x=" + "a" * 200_000 + "\necho ${#x}\n"
    assert run(reg, big).output == "200000\n"
    assert run(reg, "echo 'héllo → 世界'").output == "héllo → 世界\n"
    r = run(reg, "s=$'a\\x03b\\x04c'; echo ${#s}; v='lit\x03eral\x04'; echo ${#v}")
    assert r.output == "5\n9\n"


def test_stdin_gets_eof(reg):
    r = run(reg, 'read x; echo "rc=$? x=[$x]"; cat; echo end')
    assert r.output == "rc=1 x=[]\nend\n"


def test_state_persists(reg, tmp_path):
    run(reg, f"cd {tmp_path}; export EXP=1; PLAIN=2; fn() {{ echo fn-works; }}; alias hi='echo alias-works'")
    r = run(reg, "pwd; echo $EXP $PLAIN; fn; hi")
    assert r.output == f"{tmp_path}\n1 2\nfn-works\nalias-works\n"
    assert r.cwd == str(tmp_path)


def test_background_process_keeps_running(reg):
    r = run(reg, "sleep 300 & echo $!")
    pid = int(r.output.split()[-1])
    run(reg, "true")
    assert os.path.exists(f"/proc/{pid}")
    run(reg, f"kill {pid}")


def test_exit_status_is_exact(reg):
    for code in (0, 1, 2, 42, 255):
        assert run(reg, f"(exit {code})").exit_code == code
    assert run(reg, "false").exit_code == 1
    assert run(reg, "true").exit_code == 0


def test_return_at_top_level_is_refused_as_at_a_prompt(reg):
    # Commands run at the shell's top level, not in a sourced file.
    r = run(reg, "return 7; echo went-on")
    assert r.status == "completed" and r.exit_code == 0
    assert "return" in r.output and r.output.endswith("went-on\n")
    assert run(reg, "f() { return 7; }; f").exit_code == 7


def test_command_file_is_private_and_blanked(reg):
    run(reg, "true")
    path = os.path.join(reg._terms["t"]._tmpdir, "command.sh")
    r = run(reg, f'stat -c %a {path} {os.path.dirname(path)}; echo "${{#__dsh_magics_cmd}}"')
    file_mode, dir_mode, length = r.output.split()
    assert file_mode == "600" and dir_mode == "700"
    assert int(length) > 20  # the command is in the variable while it runs
    assert os.path.getsize(path) == 0  # nothing of the command lingers after the job
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert run(reg, 'echo "${__dsh_magics_cmd-unset}"').output != "unset\n"
    assert run(reg, 'set | grep -c "^__dsh_magics_cmd=" || :').output == "1\n"  # only this job's


def test_command_text_is_not_exported_under_allexport(reg):
    run(reg, "set -a")
    try:
        assert run(reg, 'env | grep -c __dsh_magics || :').output == "0\n"
    finally:
        run(reg, "set +a")


def test_output_without_trailing_newline_is_exact(reg):
    assert run(reg, "printf hi").output == "hi"
    assert run(reg, "printf 'a\\n\\n'").output == "a\n\n"
    assert run(reg, "true").output == ""


def test_set_e_ends_the_shell_only_on_a_commands_failure(fresh_reg):
    pid = fresh_reg.attach("t").pid
    run(fresh_reg, "set -e")
    for _ in range(3):  # the engine's own line never trips it
        assert run(fresh_reg, "true").exit_code == 0
    r = run(fresh_reg, "(exit 7)")  # a failing subshell is a failing command
    assert r.status == "shell_exited" and r.exit_code == 7
    r = run(fresh_reg, "echo fresh; false; echo never")
    assert r.status == "completed" and r.output == "fresh\nnever\n"  # the fresh shell has no set -e
    assert fresh_reg.info("t").pid != pid
    run(fresh_reg, "set -e")
    r = run(fresh_reg, "false; echo never")  # as in a terminal, set -e ends the shell
    assert r.status == "shell_exited" and "never" not in r.output


def test_exec_redirections_of_stdout_last_one_job_new_fds_persist(reg, tmp_path):
    log, three = tmp_path / "log", tmp_path / "three"
    assert run(reg, f"exec >{log} 2>&1; echo hidden; echo err >&2").output == ""
    assert log.read_text() == "hidden\nerr\n"
    assert run(reg, "echo visible").output == "visible\n"
    run(reg, f"exec 3>{three}; echo a >&3")
    assert run(reg, f"echo b >&3; exec 3>&-; cat {three}").output == "a\nb\n"


def test_a_command_file_gone_before_bash_reads_it_is_reported_not_rerun(reg):
    assert run(reg, "echo previous").output == "previous\n"
    term = reg._terms["t"]
    write = term._write_script

    def write_then_lose(text):  # fault injection: the file vanishes after our write
        path = write(text)
        os.unlink(path)
        return path

    term._write_script = write_then_lose
    try:
        r = run(reg, "echo never")
    finally:
        del term._write_script
    assert (r.status, r.exit_code) == ("completed", 126)
    assert "could not be read" in r.output and "previous" not in r.output and "never" not in r.output
    assert run(reg, "echo fine").output == "fine\n"
