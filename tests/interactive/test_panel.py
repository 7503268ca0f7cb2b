"""The panel answers prompts: an answer box, a password box shown while the
job asks for hidden entry, what the job waits for in the output header, and
who typed what in the recent jobs. ipywidgets in process (dummy comm), real
terminals; buttons are pressed with ``click()`` as the comm handler does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dsh_magics.terminal import Registry
from dsh_magics.terminal.core.proclayer import use_procfs
from dsh_magics.widgets.panel import Panel, panel
from tests.conftest import wait_until

#: The portable process layer (DSH_MAGICS_PROCFS=0, macOS) sees a blocked
#: ``read`` on the terminal only; a REPL's select/poll/epoll wait is not seen.
needs_select_detection = pytest.mark.skipif(
    not use_procfs(), reason="portable layer: select/poll waits on the terminal are not detected"
)

NB = "nb-answer-test"
PASSWORD = "panel-Pw-77x"


@pytest.fixture
def reg() -> Iterator[Registry]:
    r = Registry(login=False)
    yield r
    r.close_all()


@pytest.fixture
def pn(reg: Registry) -> Iterator[Panel]:
    p = panel(registry=reg, default_session=NB)
    assert p.widget is not None
    yield p
    p.close()


def _all_html(p: Panel) -> str:
    return "".join(
        str(w.value)
        for w in (p.h_summary, p.h_terminals, p.h_notice, p.h_outhead, p.h_output, p.h_jobs)
    )


def test_a_prompt_is_answered_from_the_answer_box(reg: Registry, pn: Panel) -> None:
    job = reg.exec(NB, "read -p 'Continue? [y/N] ' x; echo \"got [$x]\"", tty=True)
    wait_until(lambda: "waits for input" in pn.h_outhead.value, 20, msg="awaiting shown")
    assert "Continue? [y/N]" in pn.h_outhead.value
    assert pn.c_answer.layout.display == "" and pn.c_secret.layout.display == "none"
    assert not pn.c_answer.disabled
    pn.c_answer.value = "y"
    pn.b_answer.click()
    assert job.wait(20) and job.result.output.endswith("got [y]\n")
    assert pn.c_answer.value == ""
    pn.model.refresh()
    wait_until(lambda: "panel: y" in pn.h_jobs.value, 10, msg="the input is listed")
    assert job.result.inputs[0]["source"] == "panel"


def test_a_password_goes_through_the_hidden_box_only(reg: Registry, pn: Panel) -> None:
    job = reg.exec(NB, "read -s -p 'Password: ' pw; echo; echo \"len=${#pw}\"", tty=True)
    wait_until(lambda: pn.c_secret.layout.display == "", 20, msg="password box shown")
    assert pn.c_answer.layout.display == "none"
    assert "hidden answer" in pn.h_outhead.value
    pn.c_secret.value = PASSWORD
    pn.b_secret.click()
    assert pn.c_secret.value == ""
    assert job.wait(20) and f"len={len(PASSWORD)}" in job.result.output
    pn.model.refresh()
    wait_until(lambda: "panel: [secret]" in pn.h_jobs.value, 10, msg="redacted input listed")
    assert PASSWORD not in _all_html(pn) and PASSWORD not in repr(pn)
    assert PASSWORD not in job.result.output and PASSWORD not in str(job.result.inputs)


@needs_select_detection
def test_ctrl_d_ends_a_repl(reg: Registry, pn: Panel) -> None:
    job = reg.exec(NB, "python3 -i -q", tty=True)
    wait_until(lambda: "waits for input" in pn.h_outhead.value, 20, msg="repl waits")
    pn.b_ctrl_d.click()
    assert job.wait(20) and job.result.exit_code == 0
