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
    assert run(reg, "return 7").exit_code == 7
    assert run(reg, "true").exit_code == 0


def test_script_file_is_private_and_blanked(reg):
    r = run(reg, 'p="${BASH_SOURCE[0]}"; echo "$p"; stat -c %a "$p" "$(dirname "$p")"')
    path, file_mode, dir_mode = r.output.split()
    assert file_mode == "600" and dir_mode == "700"
    assert os.path.getsize(path) == 0  # nothing of the command lingers after the job
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_output_without_trailing_newline_is_exact(reg):
    assert run(reg, "printf hi").output == "hi"
    assert run(reg, "printf 'a\\n\\n'").output == "a\n\n"
    assert run(reg, "true").output == ""


def test_nonzero_return_under_set_e_reports_instead_of_killing_the_shell(fresh_reg):
    pid = fresh_reg.attach("t").pid
    run(fresh_reg, "set -e")
    r = run(fresh_reg, "return 7")
    assert (r.status, r.exit_code) == ("completed", 7)
    assert fresh_reg.info("t").pid == pid
    r = run(fresh_reg, "false; echo never")  # inside the script, set -e ends the shell
    assert r.status == "shell_exited" and "never" not in r.output
