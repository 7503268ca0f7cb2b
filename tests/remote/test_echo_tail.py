"""The echo of a job's typed lines never shows as its output, also when the
terminal's line discipline lets the begin marker overtake the end of that
echo (terminal/remote/echo.py says how that happens).

The engine test makes it happen on purpose: the reader is kept from reading
(the terminal lock held) while a 100 KB command is typed, so the terminal
runs out of room and the line discipline keeps the end of the echo back;
once the shell is blocked writing its begin marker, the reader goes on.
This is what a loaded machine did by chance (test_remote_terminal.py::
test_a_100kb_command_arrives_byte_for_byte[cmd] failed 5 of 20 runs under
two CPU hogs before the fix)."""

from __future__ import annotations

import hashlib
import platform
import random

import pytest

from dsh_magics.terminal.remote.echo import ECHO_BUFFER, EchoTail, echo_of, is_echo
from tests.conftest import wait_until
from tests.remote.conftest import run

CMD_TARGET = "cmd:--probe=sh bash --noprofile --norc -i"
_WRITE = {"x86_64": "1", "aarch64": "64"}.get(platform.machine())


def _big_command(tail: str) -> tuple[str, str]:
    rnd = random.Random(7)
    alphabet = "abcXYZ019 \t'\"\\$`!;|&<>(){}*?~#é日🙂"
    payload = "".join(rnd.choice(alphabet) for _ in range(85_000)) + "\n" + "L" * 9000 + "\n"
    quoted = "'" + payload.replace("'", "'\\''") + "'"
    return f"x={quoted}; {tail}", hashlib.md5(payload.encode()).hexdigest()


def _blocked_in_write(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/syscall") as f:
            return f.read().split()[0] == _WRITE
    except (OSError, IndexError):
        return False


@pytest.mark.skipif(_WRITE is None, reason="write's syscall number is known for x86_64 and aarch64 only")
@pytest.mark.parametrize(
    "tail, expected",
    [
        ("printf '%s' \"$x\" | md5sum", "{md5}  -\n"),  # the test that flaked
        ("printf 'first line\\n'", "first line\n"),
        (":", ""),  # no output: the end of the echo comes before the end marker's lines
    ],
)
def test_the_end_of_a_long_commands_echo_behind_its_begin_marker_is_not_output(open_remote, tail, expected):
    term = open_remote(CMD_TARGET)
    assert run(term, "true").exit_code == 0
    command, md5 = _big_command(tail)
    pid = term.pid
    assert pid is not None
    with term.core.lock:  # the reader waits for this lock before it hands on what it read
        job = term.exec(command)
        # everything was typed; the shell is stuck writing its begin marker
        # to a full terminal, with the end of the echo still held back
        wait_until(lambda: _blocked_in_write(pid), timeout=30, msg="the shell blocked writing its begin marker")
    assert job.wait(60)
    r = job.result
    assert (r.exit_code, r.output) == (0, expected.format(md5=md5))
    # the echo of the next job's lines comes back as usual (nothing taken for echo left off)
    assert run(term, "echo next").output == "next\n"


def test_a_100kb_command_arrives_byte_for_byte_in_a_container(open_remote, podman_box):
    # (the image has no md5sum; it has the tests' python)
    md5sum = "python3 -c 'import hashlib, sys; print(hashlib.md5(sys.stdin.buffer.read()).hexdigest())'"
    command, md5 = _big_command(f"printf '%s' \"$x\" | {md5sum}")
    r = run(open_remote(podman_box.target), command, timeout=60)
    assert (r.exit_code, r.output) == (0, f"{md5}\n")


# EchoTail on its own, fed what the line discipline can produce.
TYPED = "{ __c=$'" + "a" * 3000 + "'\n__c+=$'" + "b1" * 2000 + "'\n}; printf B 0123456789abcdef; tail\n"
ECHO = echo_of(TYPED)


def test_the_echo_is_the_typed_text_with_cr_lf():
    assert ECHO.count(b"\r\n") == TYPED.count("\n") and b"\n" not in ECHO.replace(b"\r\n", b"")


def test_nothing_is_owed_when_the_whole_echo_came_first_or_none_did():
    assert EchoTail.after(ECHO, ECHO) is None
    assert EchoTail.after(b"", ECHO) is None  # echo is off: nothing held back
    assert EchoTail.after(b"output of something else", ECHO) is None


def test_the_owed_run_is_taken_off_and_the_output_after_it_kept():
    n = len(ECHO)  # the line discipline holds back at most ECHO_BUFFER bytes
    for cut in (n - ECHO_BUFFER + 100, n - 1000, n - 17, n - 2, n - 1):
        tail = EchoTail.after(ECHO[:cut], ECHO)
        assert tail is not None
        assert tail.feed(ECHO[cut:] + b"out\r\n") == b"out\r\n" and tail.done


def test_an_echo_cut_between_cr_and_lf():
    """The owed run starts with LF, whose one byte alone also ends the echo:
    all of the run is taken off, also when it comes in pieces."""
    n = len(ECHO)
    cuts = [i for i in range(n - ECHO_BUFFER, n) if ECHO[i - 1 : i + 1] == b"\r\n"]
    assert len(cuts) >= 3  # the typed lines' ends within the echo buffer
    for cut in cuts:
        tail = EchoTail.after(ECHO[:cut], ECHO)
        assert tail is not None
        assert tail.feed(ECHO[cut:] + b"out\r\n") == b"out\r\n", cut
        if cut == n - 1:
            continue  # the LF is all that is owed: nothing comes in pieces
        tail = EchoTail.after(ECHO[:cut], ECHO)
        assert tail is not None
        assert tail.feed(ECHO[cut : cut + 1]) == b"" and not tail.done, cut
        assert tail.feed(ECHO[cut + 1 :] + b"out") == b"out", cut


def test_a_run_cut_by_the_reads_is_held_until_it_is_whole():
    tail = EchoTail.after(ECHO[:4000], ECHO)
    assert tail is not None
    rest = ECHO[4000:]
    assert tail.feed(rest[:5]) == b"" and not tail.done
    assert tail.feed(rest[5:-3]) == b"" and not tail.done
    assert tail.feed(rest[-3:] + b"out") == b"out" and tail.done
    assert tail.feed(b" more") == b" more"


def test_a_run_after_dropped_echo_is_found_within_the_echo_buffer():
    # the line discipline dropped the oldest of what it held back: the run
    # starts later than the last byte seen, but within its buffer of the end
    tail = EchoTail.after(ECHO[:100], ECHO)
    assert tail is not None
    assert tail.feed(ECHO[-(ECHO_BUFFER - 300) :] + b"x") == b"x"


def test_output_that_is_not_the_run_is_released_whole():
    tail = EchoTail.after(ECHO[:-40], ECHO)
    assert tail is not None
    assert tail.feed(b"hello\r\n") == b"hello\r\n" and tail.done
    # a start of the run followed by something else: all of it is output
    tail = EchoTail.after(ECHO[:-40], ECHO)
    assert tail is not None
    assert tail.feed(ECHO[-40:-30]) == b""
    assert tail.feed(b"!") == ECHO[-40:-30] + b"!"


def test_held_bytes_are_output_when_a_marker_comes_first():
    tail = EchoTail.after(ECHO[:-40], ECHO)
    assert tail is not None
    assert tail.feed(ECHO[-40:-35]) == b""
    assert tail.release() == ECHO[-40:-35] and tail.done


def test_held_data_without_the_nonce_is_still_known_as_echo():
    assert is_echo(ECHO[:5000], ECHO) and not is_echo(b"real output\r\n", ECHO) and not is_echo(b"", ECHO)
