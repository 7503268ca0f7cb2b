"""``%bash_screen``, a live view and the panel showing a real full-screen
program (``less`` on a real PTY, through the real engine's ``screen()``):
the rows as less draws them, literal text, the alternate screen coming and
going, and one-line errors."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from IPython.utils.capture import capture_output

from dsh_magics.notebook.following import LiveView
from dsh_magics.notebook.values import ScreenView
from tests.conftest import wait_until
from tests.magics.conftest import magics_of

NASTY = "$x$ <i>it</i> &amp; \\(y\\)"


def _text(fragment: str) -> str:
    body = re.sub(r"<style>.*?</style>", "", fragment)
    return html.unescape(re.sub(r"<[^>]+>", "", body))


@pytest.fixture
def paged(ip: Any, session: str, tmp_path: Path) -> Iterator[tuple[Any, Path]]:
    """``less`` showing a file, in the default session; quit afterwards."""
    path = tmp_path / "paged.txt"
    path.write_text("".join(f"row-{i:03d} {NASTY}\n" for i in range(1, 200)))
    ip.run_line_magic("bash_attach", "")
    ip.run_line_magic("bash_exec", f"cd {tmp_path}")
    magics_of(ip).registry.latest_job(session).wait(20)
    j = ip.run_line_magic("bash_exec", "--tty less paged.txt")
    try:
        wait_until(
            lambda: _on_screen(ip, "row-001"), 20, msg="less drew the file on the alternate screen"
        )
        yield j, path
    finally:
        if not j.done:
            ip.run_line_magic("bash_send", "--no-enter q")
            if not j.job.wait(10):
                j.interrupt()
            j.job.wait(10)


def _on_screen(ip: Any, needle: str) -> ScreenView | None:
    view = ip.run_line_magic("bash_screen", "")
    return view if view.alt_screen and any(needle in row for row in view.lines) else None


def test_bash_screen_shows_less_rows_literally(ip: Any, paged: tuple[Any, Path]) -> None:
    view = ip.run_line_magic("bash_screen", "")
    assert isinstance(view, ScreenView)
    cols, rows = view.screen["cols"], view.screen["rows"]
    assert len(view.lines) == rows
    # less fills every row but the last with the file, in order, then its prompt
    assert view.lines[: rows - 1] == [f"row-{i:03d} {NASTY}"[:cols] for i in range(1, rows)]
    page = view._repr_html_()
    assert "<i>" not in page and "&lt;i&gt;it&lt;/i&gt;" in page
    assert "mathjax_ignore" in page and "tex2jax_ignore" in page
    shown = _text(page)
    assert f"row-001 {NASTY}" in shown and f"row-{rows - 1:03d} {NASTY}" in shown
    assert repr(view).split("\n")[1] == f"row-001 {NASTY}"
    # less draws its prompt in inverse video: a styled cell; --plain has none
    assert re.search(r'<span style="[^"]*background:', page), page[-800:]
    plain = ip.run_line_magic("bash_screen", "--plain")._repr_html_()
    assert "<span style=" not in plain and f"row-001 {NASTY}" in _text(plain)


def test_the_screen_follows_keys_and_less_leaves_the_alternate_screen(
    ip: Any, paged: tuple[Any, Path]
) -> None:
    j, _ = paged
    ip.run_line_magic("bash_send", "--no-enter G")
    view = wait_until(lambda: _on_screen(ip, "row-199"), 20, msg="G went to the end")
    assert not any("row-001" in row for row in view.lines)
    ip.run_line_magic("bash_send", "--no-enter q")
    assert j.job.wait(20)
    after = ip.run_line_magic("bash_screen", "")
    assert not after.alt_screen and not any("row-199" in row for row in after.lines)


def test_a_live_view_draws_the_screen_while_less_runs_then_the_result(
    ip: Any, paged: tuple[Any, Path]
) -> None:
    j, _ = paged
    published: list[dict[str, Any]] = []
    view = LiveView(magics_of(ip).registry, j.job, lambda **kw: published.append(kw), screen_probe=0.0)
    view.show()
    first = published[-1]["data"]
    assert 'class="dsh-screen' in first["text/html"]
    assert f"row-001 {NASTY}" in _text(first["text/html"])
    assert "<i>" not in first["text/html"]
    assert "full-screen program" in first["text/plain"] and f"row-001 {NASTY}" in first["text/plain"]
    ip.run_line_magic("bash_send", "--no-enter G")

    def shows_the_end() -> bool:
        view.refresh()
        return "row-199" in published[-1]["data"]["text/plain"]

    wait_until(shows_the_end, 20, msg="the live view followed the screen")
    ip.run_line_magic("bash_send", "--no-enter q")
    assert j.job.wait(20)
    view.refresh()
    final = published[-1]["data"]
    assert 'class="dsh-screen' not in final["text/html"] and view.final
    assert "full-screen program" not in final["text/plain"]
    # The result keeps what less showed last (its drawing is not in the lines).
    plain = final["text/plain"]
    assert "--- the program's last screen ---" in plain and f"row-199 {NASTY}" in plain
    assert f"row-199 {NASTY}" not in j.job.result.output
    last = re.search(r'<pre class="dsh-last-screen"[^>]*>(.*?)</pre>', final["text/html"], re.S)
    assert last and f"row-199 {NASTY}" in html.unescape(last.group(1)) and "<i>" not in last.group(1)


def test_the_panel_shows_the_screen_while_less_runs(ip: Any, session: str, paged: Any) -> None:
    from dsh_magics.widgets.panel import Panel
    from dsh_magics.widgets.panel_html import render_html, render_text

    p = Panel(magics_of(ip).registry, session)
    try:
        out = p.view.output
        assert out.screen is not None and out.screen["alt_screen"]
        page = render_html(p.view)
        assert 'class="dsh-screen' in page and "<i>" not in page
        assert f"row-001 {NASTY}" in _text(page)
        assert "showing the screen (full-screen program)" in _text(page)
        assert f"  row-001 {NASTY}" in render_text(p.view).splitlines()
    finally:
        p.close()


def test_the_panel_screen_box_shows_an_idle_terminal_screen(ip: Any, session: str) -> None:
    from dsh_magics.widgets.panel import Panel

    ip.run_line_magic("bash_exec", "--timeout 20 echo 'idle $x$ <i>'")
    p = Panel(magics_of(ip).registry, session)
    try:
        assert p.view.output.screen is None  # idle, box unticked: the lines
        p.show_screen(True)
        scr = p.view.output.screen
        assert scr is not None and not scr["alt_screen"]
        assert any("idle $x$ <i>" in row for row in scr["lines"])
        p.show_screen(False)
        assert p.view.output.screen is None
    finally:
        p.close()


def test_errors_are_one_line(ip: Any) -> None:
    with capture_output() as cap:
        ip.run_cell("%bash_screen --session no-such-terminal-here")
    err = cap.stderr.strip()
    assert err.startswith("UsageError: NO_SUCH_SESSION:"), err
    assert "\n" not in err and "Traceback" not in cap.stdout + cap.stderr
    with capture_output() as cap:
        ip.run_cell("%bash_screen --bogus")
    err = cap.stderr.strip()
    assert err.startswith("UsageError: INVALID_ARGUMENT:") and "--bogus" in err, err


class _Counting:
    """The real engine, counting the screens a view asks it for."""

    def __init__(self, engine: Any) -> None:
        self._engine = engine
        self.screens: list[bool] = []  # styles of each screen() call

    def screen(self, session_id: str, *, styles: bool = False) -> dict[str, Any]:
        self.screens.append(styles)
        return self._engine.screen(session_id, styles=styles)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._engine, name)


def test_a_line_job_view_probes_the_screen_at_most_once_per_spell(ip: Any) -> None:
    """Bounded cost: a job that never enters the alternate screen is drawn as
    lines, and its view looks at the screen once per probe spell (with styles:
    the colours of the job's last lines), however often it re-renders."""
    engine = _Counting(magics_of(ip).registry)
    j = ip.run_line_magic("bash_exec", "echo started; sleep 30")
    try:
        wait_until(lambda: "started" in j.output, 10)
        published: list[dict[str, Any]] = []
        view = LiveView(engine, j.job, lambda **kw: published.append(kw), screen_probe=3600.0)
        view.show()
        for _ in range(20):
            view.refresh()
        assert engine.screens == [True]
        assert 'class="dsh-screen' not in published[-1]["data"]["text/html"]
        assert "started" in published[-1]["data"]["text/plain"]
        off = LiveView(engine, j.job, lambda **kw: published.append(kw), screen_probe=None)
        off.show()
        off.refresh()
        assert engine.screens == [True]  # no probing at all when switched off
    finally:
        j.interrupt()
        j.job.wait(10)


def test_several_keys_in_one_send_follow_the_cursor_key_mode(ip: Any, paged: tuple[Any, Path]) -> None:
    """less turns on application cursor keys: Down must go out as ESC O B
    for it to scroll. Three Downs in one %bash_send scroll three rows."""
    with capture_output():
        ip.run_line_magic("bash_send", "--key down --key down --key down")
    view = wait_until(
        lambda: (v := _on_screen(ip, "row-004")) is not None and v.lines[0].startswith("row-004") and v,
        20,
        msg="three rows down",
    )
    assert view.lines[0] == f"row-004 {NASTY}", view.lines[:3]
    with capture_output() as cap:
        ip.run_cell("%bash_send --key down --key sideways")
    err = cap.stderr.strip()
    assert err.startswith("UsageError: INVALID_ARGUMENT:") and "sideways" in err and "pgdn" in err, err


def test_bash_wait_until_screen_returns_when_the_screen_shows_it(ip: Any, paged: tuple[Any, Path]) -> None:
    j, _ = paged
    with capture_output():
        ip.run_line_magic("bash_send", "--no-enter G")
        r = ip.run_line_magic("bash_wait", "--until-screen 'row-19[0-9] .*<i>' --timeout 20")
    assert r.reason == "until_screen" and not r.timed_out and not j.done, r
    assert r.match_text.startswith("row-19") and "the screen shows: row-19" in r.note
    with capture_output() as cap:
        ip.run_cell("%bash_wait --until-screen '(' --timeout 0.1")
    assert cap.stderr.strip().startswith("UsageError: INVALID_ARGUMENT:"), cap.stderr
