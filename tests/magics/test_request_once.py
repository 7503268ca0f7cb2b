"""``%bash_wait`` builds its ``WaitRequest`` once, at the magic: ``until``,
``until_screen`` and ``idle`` go through their checks once per wait, and the live
view and the engine (``run_wait``) take the request as it is. Counted with a
profiler hook on the real checks (tests/conftest.py: ``calls_of``); nothing is patched.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from IPython.core.error import UsageError

from dsh_magics.terminal import validation as V
from dsh_magics.terminal import waits
from tests.conftest import Gate, calls_of, wait_until

CHECKS = (V.until, V.until_screen, V.idle_ms, V.wait_ms)


@pytest.mark.parametrize("display", ["plain", "live"])
def test_bash_wait_checks_each_option_once(
    ip: Any, tmp_path: Path, display: str, request: pytest.FixtureRequest
) -> None:
    if display == "live":
        request.getfixturevalue("live")
    first, later = Gate(tmp_path / "first"), Gate(tmp_path / "later")
    # The line appears only once the engine's wait runs (the gate opens then):
    # the magic's look at the output so far finds nothing, so the wait goes down.
    ip.run_line_magic("bash_exec", f"{first.shell}; echo 're''ady'; {later.shell}")
    with calls_of(*CHECKS, waits.run) as seen:

        def open_when_waiting() -> None:
            wait_until(lambda: seen.of(waits.run), 20, msg="the engine's wait to begin")
            first.open()

        opener = threading.Thread(target=open_when_waiting, name="opener")
        opener.start()
        res = ip.run_line_magic("bash_wait", "--until ready --idle 30 --until-screen nomatch --timeout 20")
        opener.join(20)
    assert res.reason == "until" and res.match_text == "ready", res
    assert len(seen.of(waits.run)) == 1, seen.by_code
    for check in (V.until, V.until_screen, V.idle_ms):
        assert len(seen.of(check)) == 1, (check.__name__, seen.of(check))
    # --timeout: one check of its milliseconds (argparse's seconds type read the text)
    assert len(seen.of(V.wait_ms)) == 1, seen.by_code
    later.open()
    assert ip.run_line_magic("bash_wait", "--timeout 20").done


def test_a_bad_regex_is_one_line_from_that_one_check(ip: Any, gate: Gate) -> None:
    ip.run_line_magic("bash_exec", gate.shell)
    with calls_of(V.until, waits.run) as seen, pytest.raises(UsageError) as err:
        ip.run_line_magic("bash_wait", "--until '(' --timeout 20")
    assert "until" in str(err.value) and "\n" not in str(err.value)
    assert len(seen.of(V.until)) == 1 and not seen.of(waits.run), seen.by_code
    gate.open()
    assert ip.run_line_magic("bash_wait", "--timeout 20").done
