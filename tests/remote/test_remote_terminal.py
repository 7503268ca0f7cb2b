"""A remote terminal behaves like a local one: through a real sshd on
127.0.0.1 (``ssh``) and a local bash driven only through its PTY (``cmd``)."""

from __future__ import annotations

import hashlib
import random
import time

import pytest

from dsh_magics.errors import (
    InvalidArgument,
    NotRunning,
    SessionBusy,
    ShellExited,
    TargetUnreachable,
)
from dsh_magics.terminal.config import TerminalConfig
from dsh_magics.terminal.core.procs import alive
from tests.conftest import pids_with_env, ps_lines, wait_until
from tests.remote.conftest import run

# a local bash driven only through its PTY, its side channel a local `sh`
# (the same code paths as a cmd: target elsewhere with a probe command)
CMD_TARGET = "cmd:--probe=sh bash --noprofile --norc -i"


@pytest.fixture(params=["ssh", "cmd"])
def term(request, open_remote, sshd):
    return open_remote(None if request.param == "ssh" else CMD_TARGET)


def test_output_status_and_persistent_state(term):
    r = run(term, "echo hello; echo err >&2")
    assert (r.status, r.exit_code, r.output) == ("completed", 0, "hello\nerr\n")
    assert run(term, "exit_with() { return $1; }; exit_with 3").exit_code == 3
    run(term, "export FOO=bar; cd /tmp; alias ll='echo aliased'")
    r = run(term, "echo $FOO; pwd; ll")
    assert r.output == "bar\n/tmp\naliased\n"
    assert r.cwd == "/tmp" and term.cwd == "/tmp"
    assert run(term, "printf 'no newline'").output == "no newline"
    assert run(term, "true").output == ""


def test_the_prompt_view_of_dollar_question_and_underscore(term):
    run(term, "false")
    assert run(term, "echo $?").output == "1\n"
    run(term, "echo a b last")
    assert run(term, "echo $_").output == "last\n"
    run(term, "true | (exit 4)")
    assert run(term, "echo $?").output == "4\n"


def test_stdin_is_dev_null_and_pagers_are_off(term):
    r = run(term, "cat; echo \"[$PAGER] [$GIT_PAGER] [$TERM]\"; [ -t 0 ] || echo notty")
    assert r.output == "[cat] [cat] [dumb]\nnotty\n"


def test_crlf_is_a_newline(term):
    assert run(term, "echo a\r\necho b\r\n").output == "a\nb\n"
    assert run(term, "echo a\recho b").output == "a\nb\n"


def test_a_100kb_command_arrives_byte_for_byte(term):
    rnd = random.Random(7)
    alphabet = "abcXYZ019 \t'\"\\$`!;|&<>(){}*?~#é日🙂"
    payload = "".join(rnd.choice(alphabet) for _ in range(85_000)) + "\n" + "L" * 9000 + "\n"
    quoted = "'" + payload.replace("'", "'\\''") + "'"
    command = f"printf '%s' {quoted} | md5sum"
    assert len(command) > 90_000
    r = run(term, command, timeout=60)
    assert r.exit_code == 0
    assert r.output.split()[0] == hashlib.md5(payload.encode()).hexdigest()


def test_a_multiline_command_with_heredoc_and_functions(term):
    r = run(term, "f() {\n  echo \"in f $1\"\n}\nf x\ncat <<'EOF'\n$HOME `x`\nEOF\n")
    assert r.output == "in f x\n$HOME `x`\n"


def test_forged_markers_do_not_end_a_job_early(term, gate):
    # Everything a command can read that might hold a nonce, and a guess:
    # each 16-hex word is printed back as end markers and probe answers.
    forge = r"""
u=$_
cands=$( { echo "$u"; set; declare -p; history; trap -p; env; echo 0123456789abcdef; } 2>/dev/null | grep -o '[0-9a-f]\{16\}' | sort -u)
for n in $cands; do
  printf '\033]6973;E;%s;0;/\007\033]6973;S;%s;0;/\007\033]6973;E;%s;0\007' "$n" "$n" "$n"
done
printf '\033]6973;P\007'
echo forged
GATE
echo "finished $(echo "$cands" | wc -l)"
"""
    job = term.exec(forge.replace("GATE", gate.shell))
    # everything forged came before "forged": the job must still run
    wait_until(lambda: "forged" in term.snapshot(job).output, timeout=20)
    assert not job.done, term.snapshot(job)
    gate.open()
    assert job.wait(20)
    r = job.result
    assert r.status == "completed" and r.exit_code == 0
    assert r.output.splitlines()[-1].startswith("finished ")
    # the probe typed on the forged prompt hint changed nothing
    assert run(term, 'echo "[$?]"').output == "[0]\n"
    assert run(term, "echo next").output == "next\n"


def test_busy_and_snapshot(term):
    job = term.exec("echo started; sleep 30")
    with pytest.raises(SessionBusy):
        term.exec("true")
    wait_until(lambda: "started" in term.snapshot(job).output, timeout=10)
    snap = term.snapshot(job)
    assert snap.timed_out and snap.status == "running"
    assert term.info().status == "busy" and term.info().job_id == job.id
    term.interrupt()
    assert job.wait(10)


def test_interrupt_settles_and_the_prompt_sees_130(term):
    job = term.exec("echo go; sleep 30; echo never")
    wait_until(lambda: "go" in term.snapshot(job).output, timeout=10)
    assert term.interrupt() is job
    assert job.wait(10), "an interrupted job settles"
    assert job.result.status == "interrupted" and job.result.exit_code == 130
    assert "never" not in job.result.output
    assert run(term, "echo $?").output == "130\n"


def test_interrupt_right_after_exec(term):
    for _ in range(3):
        job = term.exec("sleep 30")
        term.interrupt()
        assert job.wait(10), "a Ctrl-C typed before the line runs still settles the job"
        assert job.result.status == "interrupted"
        assert run(term, "echo ok").output == "ok\n"


def test_n_presses_are_n_catches(term):
    script = "n=0; trap 'n=$((n+1)); echo caught $n; [ $n -ge 3 ] && exit 7' INT; echo ready; while :; do sleep 0.05; done"
    job = term.exec("bash -c " + _q(script))
    wait_until(lambda: "ready" in term.snapshot(job).output, timeout=10)
    for i in (1, 2, 3):
        term.interrupt()
        wait_until(lambda i=i: f"caught {i}" in term.snapshot(job).output or job.done, timeout=10)
    assert job.wait(10)
    assert job.result.exit_code == 7
    assert [ln for ln in job.result.output.splitlines() if ln.startswith("caught")] == ["caught 1", "caught 2", "caught 3"]


def _q(s: str) -> str:
    return "'" + s.replace("'", "'\\''") + "'"


def test_events_and_read(term):
    events: list[dict] = []
    term.core.emit = events.append
    seq = term.output_seq
    job = term.exec("echo one; echo two")
    assert job.wait(10)
    assert term.wait_output(seq, timeout=1) != seq
    kinds = [e["type"] for e in events]
    assert kinds[0] == "job_started" and "job_done" in kinds
    done = next(e for e in events if e["type"] == "job_done")
    assert done["job_id"] == job.id and done["result"].output == "one\ntwo\n"
    rr = term.read(last=2)
    assert rr.lines == ["one", "two"]


def test_shell_exit_is_reported_and_the_terminal_is_dead(term):
    r = run(term, "echo bye; exit 3")
    assert r.status == "shell_exited"
    assert "bye" in r.output
    wait_until(lambda: term.dead, timeout=10)
    assert term.info().status == "dead"
    with pytest.raises(ShellExited):
        term.exec("true")


def test_close_ends_the_remote_shell_and_its_jobs(open_remote, sshd):
    term = open_remote()
    marker = f"{time.monotonic_ns() % 10**6 + 10**6}.5"
    run(term, f"sleep {marker} & sleep {marker} </dev/null >/dev/null 2>&1 & echo started")
    shell_pid = int(run(term, "echo $$").output)
    wait_until(lambda: sum(f"sleep {marker}" in ln for ln in ps_lines()) == 2, timeout=10)
    client = term.pid
    term.close()
    assert term.closed and term.dead
    assert not alive(client)
    wait_until(lambda: not alive(shell_pid), timeout=10, msg="the remote shell outlived close()")
    wait_until(lambda: not any(f"sleep {marker}" in ln for ln in ps_lines()), timeout=10, msg="its jobs outlived close()")


def test_busy_close_hangs_up_the_running_job(open_remote, sshd):
    term = open_remote()
    marker = f"{time.monotonic_ns() % 10**6 + 2 * 10**6}.5"
    job = term.exec(f"echo go; sleep {marker}")
    wait_until(lambda: "go" in term.snapshot(job).output, timeout=10)
    term.close()
    assert job.wait(5) and job.result.status == "shell_exited"
    wait_until(lambda: not any(f"sleep {marker}" in ln for ln in ps_lines()), timeout=10)


def test_remote_cwd_at_start(open_remote, sshd, tmp_path):
    term = open_remote(cwd=str(tmp_path))
    assert term.cwd == str(tmp_path)
    assert run(term, "pwd").output == f"{tmp_path}\n"


def test_the_terminal_echoes_and_the_engines_lines_never_show(term):
    """The remote terminal echoes, as a terminal window does; the echo of
    the engine's own lines is dropped. A command that leaves echo off gets
    it back with the job after next (the next one's lines come back
    without their echo, which is how the engine notices)."""
    echo = "stty -a </dev/tty | grep -o -- '-\\?echo ' | head -1"
    assert run(term, echo).output == "echo \n"
    assert run(term, "stty -echo </dev/tty; echo set").output == "set\n"
    assert run(term, "echo one").output == "one\n"
    assert run(term, echo).output == "echo \n"
    assert run(term, "echo two").output == "two\n"
    assert term.read().text == "echo \nset\none\necho \ntwo"


def test_missing_start_cwd_is_invalid_argument(open_remote, sshd):
    with pytest.raises(InvalidArgument, match="not a directory"):
        open_remote(cwd="/no/such/dir/here")


def test_no_shell_answering_times_out_and_kills_the_client(open_remote):
    # `cat` on a terminal is no shell: it never answers the ready probe.
    session = f"nocat-{time.monotonic_ns()}"
    with pytest.raises(TargetUnreachable, match="no shell answered within 1s"):
        open_remote("cmd:cat", session=session, config=TerminalConfig(login=False, start_timeout=1.0))
    assert not any(f"DSH_MAGICS_SESSION={session}" in ln for ln in ps_lines())
    assert pids_with_env("DSH_MAGICS_SESSION", session, prefix=True) == []


def test_cmd_target_close_kills_local_descendants(open_remote):
    term = open_remote(CMD_TARGET)
    marker = f"{time.monotonic_ns() % 10**6 + 3 * 10**6}.5"
    run(term, f"sleep {marker} & (setsid sleep {marker} &) ; echo started")
    wait_until(lambda: sum(f"sleep {marker}" in ln for ln in ps_lines()) == 2, timeout=10)
    term.close()
    wait_until(lambda: not any(f"sleep {marker}" in ln for ln in ps_lines()), timeout=10)


def test_prompt_view_under_set_e_and_after_a_syntax_error(term):
    run(term, "set -e")
    run(term, "! true")  # $? is 1 without failing
    assert run(term, "echo $? alive").output == "1 alive\n", "restoring $?=1 must not trip set -e"
    run(term, "set +e")
    r = run(term, "if then")
    assert r.exit_code == 2 and "syntax error" in r.output
    assert run(term, "echo $?").output == "2\n"
    run(term, "trap 'echo ERR-TRAP' ERR; ! true")
    assert run(term, "echo $?").output == "1\n", "restoring $?=1 fires no ERR trap"
    run(term, "trap - ERR")


def test_an_open_heredoc_or_pipe_never_shows_the_engine_text(term):
    r = run(term, "cat <<EOF\nbody")
    assert "body" in r.output.splitlines() and "__dsh" not in r.output
    assert run(term, "echo $?; echo next").output == "0\nnext\n"
    r = run(term, "false\necho tail |")
    assert "__dsh" not in r.output


def test_remote_start_cwd_with_tilde(open_remote, sshd):
    term = open_remote(cwd="~")
    home = run(term, 'echo "$HOME"').output.strip()
    assert term.cwd == home


def test_a_tty_job_reads_what_is_typed_and_it_shows(term):
    job = term.exec("read -p 'name? ' x; echo \"hello [$x]\"", tty=True)
    wait_until(lambda: "name? " in term.snapshot(job).output, timeout=10)
    term.type_input("world\n")
    assert job.wait(10)
    assert job.result.output == "name? world\nhello [world]\n"
    # the engine's own lines never show, and stdin is /dev/null again
    assert run(term, "cat; echo after").output == "after\n"
    with pytest.raises(NotRunning):
        term.type_input("ls\n")


def test_history_lists_the_jobs_as_written_and_nothing_of_the_engine(term):
    run(term, "echo one")
    run(term, "for i in 1 2; do\n  echo $i\ndone")
    out = run(term, "history").output
    entries = [line.split(None, 1)[1] for line in out.splitlines() if line[:6].strip().isdigit()]
    assert entries[-3:] == ["echo one", "for i in 1 2; do", "history"], out
    assert "dsh" not in out and "6973" not in out
    # As in the local shell (docs/engine.md, "Limits"): bash's own recording
    # reads off inside a job, the engine adds each job itself (so `fc -l`
    # lists itself too, and `set +o history` in a job does not stop that),
    # and a job that turns recording on gets none of the engine's lines
    # recorded.
    assert [line.split(None, 1)[1] for line in run(term, "fc -l").output.splitlines()[-2:]] == ["history", "fc -l"]
    assert run(term, "[[ -o history ]] || echo off").output == "off\n"
    run(term, "set +o history")
    run(term, "echo still-recorded")
    run(term, "set -o history")
    run(term, "echo after")
    out = run(term, "history 4").output
    assert [line.split(None, 1)[1] for line in out.splitlines()] == ["echo still-recorded", "set -o history", "echo after", "history 4"], out


def test_a_profile_without_history_gets_no_entries(open_remote, tmp_path):
    """History off in the start-up files: the jobs are not recorded (as in
    the local shell)."""
    rc = tmp_path / "rc"
    rc.write_text("set +o history\n")
    term = open_remote(f"cmd:--probe=sh bash --noprofile --rcfile {rc} -i")
    run(term, "echo one")
    assert run(term, "history; [[ -o history ]] || echo off").output == "off\n"


def test_pipestatus_and_a_debug_trap_see_the_prompt_view(term, tmp_path):
    run(term, "false | true | (exit 3)")
    assert run(term, 'echo "[$? ${PIPESTATUS[*]}]"').output == "[3 1 0 3]\n"
    seen = tmp_path / "seen"
    run(term, f"trap 'printf \"%s\\n\" \"$BASH_COMMAND\" >>{seen}' DEBUG")
    assert run(term, "echo traced").output == "traced\n"
    assert "DEBUG" in run(term, "trap -p DEBUG").output, "the user's trap is in place while jobs run"
    run(term, "trap - DEBUG")
    text = seen.read_text()
    assert "echo traced" in text and "6973;E" not in text


def test_send_types_a_line_and_records_who(term):
    job = term.exec("read -p 'go? ' x; echo \"got [$x]\"", tty=True)
    wait_until(lambda: "go? " in term.snapshot(job).output, timeout=10)
    got, start, prompt = term.send("yes", source="agent", caller="me")
    assert got is job and prompt == "go? "
    assert job.wait(10)
    assert job.result.output == "go? yes\ngot [yes]\n"
    assert [(r["source"], r["text"], r["caller"]) for r in job.result.inputs] == [("agent", "yes", "me")]
    job = term.exec("sleep 30", tty=True)
    term.send(key="ctrl-c")
    assert job.wait(10) and job.result.status == "interrupted"
    with pytest.raises(NotRunning):
        term.send("ls")
