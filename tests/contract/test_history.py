"""A job's command reaches the history list as a prompt's line would, on
every backend (issue 32): its text runs as written, ``!`` in any of its lines
included (no history expansion: the local shell keeps bash's recording off
inside jobs and adds each job itself, and so does a remote one), and it is
one entry, newlines and all (docs/engine.md, "Limits")."""

from __future__ import annotations

import re

from dsh_magics.terminal import Engine, Result

# `!zz` names no event (bash would print "event not found" and run nothing of
# the line); `!!` and `!-1` name the previous entry, which exists.
COMMAND = "true\necho one!zz two\necho 'q!!' \"d!-1\" u!!\nfor w in a; do\n  echo \"$w!zz\"\ndone"
OUTPUT = "one!zz two\nq!! d!-1 u!!\na!zz\n"


def _done(engine: Engine, session: str, command: str) -> Result:
    out = engine.exec(session, command, wait_ms=20_000)
    assert isinstance(out, Result), f"{command!r} did not finish"
    return out


def test_a_multiline_command_runs_without_history_expansion_and_is_one_entry(engine: Engine) -> None:
    s = "h-bang"
    _done(engine, s, "echo before")
    res = _done(engine, s, COMMAND)
    assert (res.status, res.exit_code, res.output) == ("completed", 0, OUTPUT)
    out = _done(engine, s, "history 2").output
    m = re.fullmatch(r" *(\d+)  (.*)\n *(\d+)  history 2\n", out, re.S)
    assert m is not None, out
    assert m.group(2) == COMMAND and int(m.group(3)) == int(m.group(1)) + 1, out
    # ... and nothing of it was added as entries of their own before it
    assert _done(engine, s, "history 4").output.splitlines()[0].endswith("  echo before")
