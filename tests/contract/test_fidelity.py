"""A job sees the shell as a prompt would, and nothing it can read gives away
its end marker (issue 13), in-process and through the terminal host.

Each forgery case reads one place a command could look for the marker's
nonce, prints an end marker for every 16-hex-digit token it found (with a
status that no real job here has), then keeps running: the job must settle
only when the command really ends, with its real status and all its output.
"""

from __future__ import annotations

import sys

import pytest

from dsh_magics.terminal import Engine, Result

from ..conftest import Gate, wait_until

FAKE = 77
# Prints a forged end marker (old and new layouts) for every token in stdin.
FORGE = (
    "__forge() { local t; for t in $(grep -oE '[0-9a-f]{16}' | sort -u); do "
    f"printf '\\033]6973;E;%s;{FAKE};{FAKE}\\007\\033]6973;E;%s;{FAKE}\\007' \"$t\" \"$t\"; done; }}"
)


def _done(engine: Engine, session: str, command: str, wait_ms: int = 20_000) -> Result:
    out = engine.exec(session, command, wait_ms=wait_ms)
    assert isinstance(out, Result), f"{command!r} did not finish"
    return out


def _out(engine: Engine, session: str, command: str) -> str:
    return _done(engine, session, command).output


# -- the prompt's view ---------------------------------------------------------
def test_status_last_argument_and_pipestatus_carry_over(engine: Engine) -> None:
    s = "f-view"
    assert _out(engine, s, 'echo "[$?]"') == "[0]\n"  # a fresh shell, as bash -i
    assert _done(engine, s, "false").exit_code == 1
    assert _out(engine, s, 'echo "[$?]"') == "[1]\n"
    _done(engine, s, "echo a b last")
    assert _out(engine, s, 'echo "[$_]"') == "[last]\n"
    _done(engine, s, "false | true | (exit 3)")
    # A pipeline leaves $_ as it was (here: the last argument of the echo above).
    assert _out(engine, s, 'echo "[$? ${PIPESTATUS[*]} $_]"') == "[3 1 0 3 [last]]\n"
    assert _out(engine, s, 'echo "[${PIPESTATUS[*]}]"') == "[0]\n"
    _done(engine, s, "printf '%s\\n' x 'two words'")
    assert _out(engine, s, 'echo "[$_]"') == "[two words]\n"
    assert _done(engine, s, "echo 'unterminated").exit_code == 2
    assert _out(engine, s, 'echo "[$?]"') == "[2]\n"


def test_a_nonzero_status_restored_fires_no_err_trap_and_trips_no_set_e(engine: Engine) -> None:
    s = "f-errexit"
    _done(engine, s, "trap 'echo on-err' ERR")
    assert _done(engine, s, "(exit 4)").output == "on-err\n"
    res = _done(engine, s, 'echo "[$?]"')
    assert (res.status, res.output) == ("completed", "[4]\n")  # no second ERR
    _done(engine, s, "trap - ERR; set -e")
    _done(engine, s, "(exit 5) || :")
    _done(engine, s, "false || :")
    res = _done(engine, s, 'echo "[$?] still here"')
    assert (res.status, res.output) == ("completed", "[0] still here\n")
    _done(engine, s, "set +e")


def test_status_after_an_interrupted_job(engine: Engine) -> None:
    s = "f-intr"
    job = engine.exec(s, "echo go; sleep 30")
    wait_until(lambda: "go" in engine.result(job.id).output, 10)
    engine.interrupt(s)
    assert engine.wait(job.id, timeout=10).status == "interrupted"
    assert _out(engine, s, 'echo "[$?]"') == "[130]\n"
    assert _out(engine, s, 'echo "[$?]"') == "[0]\n"


def test_fc_lists_the_history_without_itself(engine: Engine, request: pytest.FixtureRequest) -> None:
    """At a prompt, ``fc -l`` leaves its own line out (bash 5.2 in a PTY shows
    the commands before it; ``history`` shows itself)."""
    request.applymarker(pytest.mark.xfail(strict=True, reason=(
        "known gap: the engine adds each job with `history -s` (bash's own recording "
        "is off inside jobs), and bash's fc then lists the running `fc -l` too "
        "(docs/engine.md, known limits)"
    )))
    s = "f-fc"
    _done(engine, s, "echo one")
    _done(engine, s, "echo two")
    fc = _out(engine, s, "fc -l")
    assert [line.split(None, 1)[1] for line in fc.splitlines()][-2:] == ["echo one", "echo two"], fc


def test_history_lists_the_jobs_as_written(engine: Engine) -> None:
    s = "f-history"
    _done(engine, s, "echo one")
    _done(engine, s, "for i in 1 2; do\n  echo $i\ndone")
    out = _out(engine, s, "history")
    entries = [line.split(None, 1)[1] for line in out.splitlines() if line[:6].strip().isdigit()]
    assert entries[-3:] == ["echo one", "for i in 1 2; do", "history"], out
    assert "dsh" not in out and "6973" not in out and "/dev/shm" not in out
    fc = _out(engine, s, "fc -l")
    assert "echo one" in fc and "dsh" not in fc and "6973" not in fc
    assert _out(engine, s, 'echo "[${HISTFILE-unset}]"') == "[unset]\n"
    # A job that switches bash's own recording on cannot get the engine's
    # lines recorded: it is off again before bash reads the next one.
    _done(engine, s, "set -o history")
    _done(engine, s, "echo after")
    out = _out(engine, s, "history")
    assert "echo after" in out and "dsh" not in out and "6973" not in out


@pytest.mark.parametrize(
    "command,output",
    [("true\r\necho x\r\n", "x\n"), ("echo a\recho b", "a\nb\n"), ("printf '%s|' a\r\n", "a|")],
    ids=["crlf", "lone-cr", "crlf-quoted-line"],
)
def test_crlf_runs_as_typed(engine: Engine, command: str, output: str) -> None:
    res = _done(engine, "f-crlf", command)
    assert (res.status, res.exit_code, res.output) == ("completed", 0, output)


# -- no path to the nonce ------------------------------------------------------
READERS = {
    "last-arg": 'printf "%s\\n" "$_"',
    "history": "history; fc -l",
    "bash-command": 'printf "%s\\n" "$BASH_COMMAND"',
    "state": "trap -p; declare -p; declare -f; set; env; caller; caller 0",
    "proc-cmdline-environ": "cat /proc/$$/cmdline /proc/$$/environ | tr '\\0' '\\n'",
    "open-fds": "for f in /proc/$$/fd/* /proc/self/fd/*; do timeout 0.2 cat \"$f\"; done 2>/dev/null",
    # The engine's private directory, found through the shell's saved stdout.
    "scratch-files": (
        "d=$(for f in /proc/$$/fd/*; do readlink \"$f\"; done | grep -m1 -oE '^/.*/dsh-magics-[^/]+'); "
        'test -f "$d"/command.sh && { cat "$d"/*; echo read-scratch >/dev/tty; }'
    ),
}


@pytest.mark.parametrize("reader", list(READERS), ids=list(READERS))
def test_nothing_a_command_reads_forges_its_end(engine: Engine, reader: str, gate: Gate) -> None:
    s = "f-forge"
    _done(engine, s, FORGE)
    job = engine.exec(s, f"{{ {READERS[reader]}; }} 2>/dev/null | __forge; echo forged; {gate.shell}; echo really-done")
    # Everything forged came before "forged": once that is in, the job must
    # still be running (it waits at the gate).
    wait_until(lambda: "forged\n" in engine.result(job.id).output, 20, msg="the forgeries printed")
    assert not job.done, engine.result(job.id).to_dict()
    gate.open()
    res = engine.wait(job.id, timeout=20)
    assert (res.status, res.exit_code) == ("completed", 0), res.to_dict()
    assert res.output.endswith("forged\nreally-done\n")
    assert reader != "scratch-files" or "read-scratch" in res.output  # the files were there to read


def _trap_forges(engine: Engine, s: str, setup: str, tmp_path) -> None:
    seen = tmp_path / "seen"
    _done(engine, s, FORGE)
    _done(engine, s, f"{setup.format(seen=seen)}")
    for command, code in (("true", 0), ("false", 1), ("(exit 3)", 3)):
        res = _done(engine, s, command)
        assert (res.status, res.exit_code) == ("completed", code), (command, res.to_dict())
    # A command in steps: the trap forges before each; "late" comes last.
    gate = Gate(tmp_path / "gate")
    job = engine.exec(s, f"echo early; {gate.shell}; echo late")
    wait_until(lambda: "early" in engine.result(job.id).output, 20, msg="early")
    assert not job.done, engine.result(job.id).to_dict()
    gate.open()
    res = engine.wait(job.id, timeout=20)
    assert (res.status, res.exit_code, res.output) == ("completed", 0, "early\nlate\n"), res.to_dict()
    assert "6973;E" not in seen.read_text()


@pytest.mark.parametrize(
    "trap",
    [
        "trap 'printf \"%s\\n\" \"$BASH_COMMAND\" >>{seen}; __forge <<<\"$BASH_COMMAND\" >/dev/tty' DEBUG",
        "set -T; trap 'printf \"%s\\n\" \"$BASH_COMMAND\" >>{seen}; __forge <<<\"$BASH_COMMAND\" >/dev/tty' DEBUG",
        "trap 'printf \"%s\\n\" \"$BASH_COMMAND\" >>{seen}; __forge <<<\"$BASH_COMMAND\" >/dev/tty' ERR",
        "set -T; trap 'printf \"%s\\n\" \"$BASH_COMMAND\" >>{seen}; __forge <<<\"$BASH_COMMAND\" >/dev/tty' RETURN",
    ],
    ids=["debug", "debug-functrace", "err", "return-functrace"],
)
def test_a_users_trap_never_sees_the_end_marker(engine: Engine, trap: str, tmp_path) -> None:
    _trap_forges(engine, "f-trap", trap, tmp_path)


def test_xtrace_into_a_file_never_shows_the_end_marker(engine: Engine, tmp_path) -> None:
    s, trace = "f-xtrace", tmp_path / "trace"
    _done(engine, s, f"exec 9>>{trace}; BASH_XTRACEFD=9; set -x")
    assert _done(engine, s, "echo traced").output == "traced\n"
    assert _done(engine, s, "false").exit_code == 1
    _done(engine, s, "set +x")
    text = trace.read_text()
    assert "echo traced" in text and "6973;E" not in text


# -- interrupts ----------------------------------------------------------------
COUNTER = (
    f"{sys.executable} -u -c '"
    "import signal, time\n"
    "n = 0\n"
    "def on_int(sig, frame):\n"
    "    global n\n"
    "    n += 1\n"
    "    print(\"caught\", n, flush=True)\n"
    "signal.signal(signal.SIGINT, on_int)\n"
    "print(\"ready\", flush=True)\n"
    "while n < 4:\n"
    "    time.sleep(0.01)\n"
    "time.sleep(0.3)\n"
    "print(\"bye\", n)'"
)


def test_one_interrupt_is_one_sigint(engine: Engine) -> None:
    """N presses, N catches, the first one right after the first output."""
    s = "f-count"
    for _ in range(2):
        job = engine.exec(s, COUNTER)
        wait_until(lambda job=job: "ready\n" in engine.result(job.id).output, 10)  # the whole first line
        for k in range(1, 5):
            assert engine.interrupt(s) is not None
            wait_until(lambda job=job, k=k: f"caught {k}\n" in engine.result(job.id).output, 10)
        res = engine.wait(job.id, timeout=10)
        assert (res.status, res.exit_code) == ("completed", 0), res.to_dict()
        assert res.output == "ready\n" + "".join(f"caught {k}\n" for k in range(1, 5)) + "bye 4\n"
