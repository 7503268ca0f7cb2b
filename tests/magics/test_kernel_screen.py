"""A full-screen program in a real ipykernel (jupyter_client): ``less`` in a
job's live area shows the terminal's screen, updated in place, and
``%bash_screen`` returns it as literal HTML."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.magics.kernel_support import Kernel, loaded_kernel

pytestmark = pytest.mark.kernel

NASTY = "$x$ <i>it</i>"


@pytest.fixture(scope="module")
def kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Kernel]:
    cwd = tmp_path_factory.mktemp("kernel-screen")
    (cwd / "paged.txt").write_text("".join(f"row-{i:03d} {NASTY}\n" for i in range(1, 200)))
    with loaded_kernel(str(cwd)) as k:
        yield k


def _text(fragment: str) -> str:
    body = re.sub(r"<style>.*?</style>", "", fragment)
    return html.unescape(re.sub(r"<[^>]+>", "", body))


def _is_update_of(display_id: str, needle: str) -> Any:
    def pred(m: dict[str, Any]) -> bool:
        return (
            m["msg_type"] == "update_display_data"
            and m["content"]["transient"].get("display_id") == display_id
            and needle in m["content"]["data"]["text/plain"]
        )

    return pred


def test_less_in_a_live_area_and_bash_screen(kernel: Kernel, tmp_path: Path) -> None:
    ex = kernel.run("j = %bash_exec --tty less paged.txt")
    ids = [
        m["content"]["transient"]["display_id"]
        for m in ex.msgs
        if m["msg_type"] == "display_data" and (m["content"].get("transient") or {}).get("display_id")
    ]
    assert len(ids) == 1
    did = ids[0]
    try:
        # The area switches to the screen once less is on the alternate screen.
        upd = kernel.collect_until(_is_update_of(did, "full-screen program"), timeout=30)
        page = upd["content"]["data"]["text/html"]
        assert 'class="dsh-screen' in page and "<i>" not in page
        assert f"row-001 {NASTY}" in _text(page)

        shot = kernel.run("%bash_screen")
        results = shot.of_type("execute_result")
        assert len(results) == 1
        data = results[0]["content"]["data"]
        page = data["text/html"]
        assert "mathjax_ignore" in page and "<i>" not in page and "&lt;i&gt;" in page
        shown = _text(page)
        for i in range(1, 20):
            assert f"row-{i:03d} {NASTY}" in shown, shown
        assert "alternate screen" in data["text/plain"]
        assert data["text/plain"].split("\n")[1] == f"row-001 {NASTY}"

        # A key moves the program; the area follows in place.
        kernel.run("%bash_send --no-enter G")
        kernel.collect_until(_is_update_of(did, "row-199"), timeout=30)
    finally:
        kernel.run("%bash_send --no-enter q")
        kernel.run("j.wait(30)")
    assert kernel.value("j.status") == "completed"
    done = kernel.collect_until(_is_update_of(did, "ok in"), timeout=30)
    assert 'class="dsh-screen' not in done["content"]["data"]["text/html"]
