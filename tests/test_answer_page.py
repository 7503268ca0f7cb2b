"""The one-time answer page in-process (answer/page.py): a listener that fails
as the page ends is said in the log, and the page still ends (issue 34 §4).
The page over a real host is tests/host/test_pages.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dsh_magics.answer.page import AnswerPage, pending_secret
from dsh_magics.terminal.registry import Registry

from .conftest import wait_until
from .host.test_pages import listening

STEP = 30


@pytest.fixture
def registry() -> Iterator[Registry]:
    reg = Registry(login=False)
    try:
        yield reg
    finally:
        reg.close_all()


def test_a_failing_listener_is_logged_and_the_page_still_ends(registry: Registry, caplog) -> None:
    sid = "answer-page"
    registry.attach(sid)
    registry.exec(sid, "read -r -s -p 'Passphrase: ' pw; echo", tty=True)
    wait_until(lambda: pending_secret(registry, sid) is not None, STEP, msg="no password prompt")
    prompt = pending_secret(registry, sid)
    assert prompt is not None

    def broken(outcome: str) -> None:
        raise RuntimeError(f"listener failed on purpose ({outcome})")

    page = AnswerPage(registry, prompt, on_end=broken)
    assert listening(page.url)
    with caplog.at_level("WARNING", logger="dsh_magics.answer.page"):
        page.close("closed")
    assert page.outcome == "closed"
    wait_until(lambda: not listening(page.url), STEP, msg="the page still answers")
    failed = [r for r in caplog.records if r.name == "dsh_magics.answer.page"]
    assert failed and failed[0].exc_info is not None
    assert "listener failed on purpose (closed)" in caplog.text
