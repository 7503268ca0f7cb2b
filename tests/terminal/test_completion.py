"""Completion is per job and cannot be faked by anything the command prints."""

from __future__ import annotations

import os

from tests.conftest import wait_until

from .conftest import run


def test_printing_environment_does_not_end_the_job_early(reg):
    r = run(reg, "env >/dev/null; set; declare -p; echo after-env")
    assert r.exit_code == 0
    assert r.output.endswith("after-env\n")
    assert run(reg, "echo next").output == "next\n"


def test_printing_own_command_file_and_variable(reg):
    run(reg, "true")  # the terminal exists
    path = os.path.join(reg._terms["t"]._tmpdir, "command.sh")
    command = f'cat {path}; printf "%s\\n" "$__dsh_magics_cmd"; echo tail'
    r = run(reg, command)
    assert r.exit_code == 0
    assert r.output.endswith("\ntail\n")
    assert r.output.count(f"cat {path}") == 2  # the file (quoted) and the variable
    assert run(reg, "echo next").output == "next\n"


def _held_open(reg, gate, command: str, before_gate: str):
    """Run ``command``, which prints ``before_gate`` and then blocks at the
    gate: the job must still be running once that text is in, so nothing
    printed before it ended the job."""
    job = reg.exec("t", command)
    wait_until(lambda: before_gate in reg.result(job.id).output, 10, msg=repr(before_gate))
    assert not job.done, reg.result(job.id).to_dict()
    gate.open()
    return reg.wait(job.id, timeout=20)


def test_output_containing_an_earlier_jobs_marker(reg, gate):
    # Record the raw PTY bytes of one job (markers included), then have the
    # next job print exactly those bytes: they must be treated as data.
    term = reg._terms["t"]
    raw: list[bytes] = []
    original = term._on_pty
    term._on_pty = lambda data: (raw.append(data), original(data))[1]
    try:
        assert run(reg, "echo one").output == "one\n"
    finally:
        del term._on_pty
    blob = b"".join(raw)
    assert b"\x1b]6973;E;" in blob
    octal = "".join(f"\\{b:03o}" for b in blob)
    r = _held_open(reg, gate, f"printf '{octal}'; echo still-running; {gate.shell}; echo done", "still-running")
    assert r.output == "one\nstill-running\ndone\n"
    assert run(reg, "echo clean").output == "clean\n"


def test_output_imitating_marker_format_with_random_nonces(reg, gate):
    r = _held_open(
        reg,
        gate,
        "for i in 1 2 3; do n=$(head -c8 /dev/urandom | od -An -tx1 | tr -d ' \\n');"
        " printf '\\033]6973;E;%s;0\\007\\033]6973;S;%s\\007' $n $n; done; echo forged;"
        f" {gate.shell}; echo real-end",
        "forged",
    )
    assert r.output == "forged\nreal-end\n"
    assert r.exit_code == 0


def test_typed_line_is_never_echoed_even_after_stty_echo(reg):
    since = reg.read("t").next_line
    r = run(reg, "stty echo </dev/tty; echo x")
    assert r.output == "x\n"
    r = run(reg, "echo y")
    assert r.output == "y\n"
    assert reg.read("t", since=since).text == "x\ny"


def test_no_output_lost_or_leaked_between_jobs(reg):
    for i in range(50):
        r = run(reg, f"seq 1 {i * 37}; printf 'tail{i}'")
        expected = "".join(f"{n}\n" for n in range(1, i * 37 + 1)) + f"tail{i}"
        assert r.output == expected


def test_job_ids_are_unguessable_and_never_reused(reg):
    ids = set()
    for _ in range(30):
        job = reg.exec("t", "true")
        assert job.id.startswith("bash-") and len(job.id) == 37
        ids.add(job.id)
        reg.wait(job.id, timeout=10)
    assert len(ids) == 30
