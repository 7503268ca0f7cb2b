"""Colours of ordinary job output in HTML views (issue 36), real bash in-process:
the engine keeps a job's lines without ANSI and, beside them, the colours the
job printed (``Result.styles``), so the HTML of a result shows 16, 256 and true
colours, bold and underline on every line it shows, long after the screen
scrolled; text/plain, ``r.output``, ``to_dict()`` and the agent tools stay
plain, and text stays escaped. A result without styles (from a host before
them) still takes its colours from the rows the screen shows."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from dsh_magics import tools
from dsh_magics.notebook import render
from dsh_magics.notebook.values import output_colours
from tests.conftest import wait_until
from tests.magics.conftest import magics_of

COLOURED = (
    r"printf '\e[31mred <b>$x$\e[0m plain\n\e[38;5;208morange\e[0m\n"
    r"\e[38;2;1;2;3mtrue\e[0m \e[1mbold\e[0m \e[4munder\e[0m\nlast plain\n'"
)


def _pre(html: str) -> str:
    found = re.search(r"<pre[^>]*>(.*?)</pre>", html, re.S)
    assert found, html
    return found.group(1)


def test_a_result_keeps_its_colours_in_html_and_is_plain_in_text(ip: Any) -> None:
    r = ip.run_line_magic("bash_exec", f"--timeout 20 {COLOURED}")
    data = ip.display_formatter.format(r)[0]
    pre = _pre(data["text/html"])
    assert '<span style="color:#cd0000">red &lt;b&gt;$x$</span> plain' in pre
    assert '<span style="color:#ff8700">orange</span>' in pre
    assert '<span style="color:#010203">true</span>' in pre
    assert '<span style="font-weight:bold">bold</span>' in pre
    assert '<span style="text-decoration:underline">under</span>' in pre
    assert pre.endswith("\nlast plain")
    assert "\x1b" not in data["text/plain"] and "red <b>$x$ plain\norange\n" in data["text/plain"]


def test_every_shown_line_keeps_its_colour_after_the_screen_scrolled(ip: Any) -> None:
    """The screen has 30 rows, the view shows 40 lines (and more on request):
    each keeps its colour, also one the pen carried over from lines and reads
    before it."""
    reg = magics_of(ip).registry
    r = ip.run_line_magic(
        "bash_exec",
        r"--timeout 20 printf '\e[31m'; seq 1 60; printf '\e[0m'; "
        r"for i in $(seq 1 60); do printf '\e[3%dmc%d\e[0m p%d\n' $((i % 7 + 1)) $i $i; done",
    )
    assert r.ok and "\x1b" not in r.output and r.styles
    html = _pre(render.result_html(r, tail=120, styled=output_colours(reg, r, tail=120)))
    rows = html.split("\n")
    assert len(rows) == 120
    assert all(row == f'<span style="color:#cd0000">{i}</span>' for i, row in zip(range(1, 61), rows[:60], strict=True))
    for i, row in zip(range(1, 61), rows[60:], strict=True):
        colour = render_colour(i % 7 + 1)
        assert row == f'<span style="color:{colour}">c{i}</span> p{i}', row
    # the default view: its 40 lines, all coloured
    shown = _pre(render.result_html(r, styled=output_colours(reg, r)))
    assert shown.count("<span") == 40


def render_colour(index: int) -> str:
    from dsh_magics.notebook.screen_html import palette

    return palette(index)


def test_an_older_result_keeps_its_own_colours(ip: Any) -> None:
    reg = magics_of(ip).registry
    first = ip.run_line_magic("bash_exec", r"--timeout 20 printf '\e[32mgreen\e[0m\n'")
    ip.run_line_magic("bash_exec", r"--timeout 20 printf '\e[31mgreen\e[0m\n'")
    assert output_colours(reg, first) == {0: '<span style="color:#00cd00">green</span>'}


def test_colours_never_go_on_the_wrong_lines(ip: Any) -> None:
    """Without its own styles (a result from a host before them), a result's
    colours come from the screen, only while the screen shows its lines."""
    reg = magics_of(ip).registry
    first = ip.run_line_magic("bash_exec", r"--timeout 20 printf '\e[32mgreen\e[0m\n'")
    first = dataclasses.replace(first, styles=None)
    assert output_colours(reg, first)  # while the screen shows it
    ip.run_line_magic("bash_exec", r"--timeout 20 printf '\e[31mgreen\e[0m\n'")
    # an older result: its lines are no longer what the screen shows for it
    assert output_colours(reg, first) == {}
    assert "<span" not in _pre(render.result_html(first, styled=output_colours(reg, first)))


def test_styles_that_do_not_fit_their_lines_are_left_out(ip: Any) -> None:
    """Rows beyond a line's end (an output cut or replaced) colour nothing."""
    reg = magics_of(ip).registry
    r = ip.run_line_magic("bash_exec", r"--timeout 20 printf 'ab\n\e[31mlonger line\e[0m\n'")
    assert output_colours(reg, r) == {1: '<span style="color:#cd0000">longer line</span>'}
    swapped = dataclasses.replace(r, output="longer line\nab\n")
    assert output_colours(reg, swapped) == {}


def test_text_surfaces_stay_plain(ip: Any, session: str) -> None:
    """r.output, text/plain, to_dict() and the agent tools carry no escape
    sequence and no styles; only the HTML has colours."""
    r = ip.run_line_magic("bash_exec", f"--timeout 20 {COLOURED}")
    assert r.styles and "\x1b" not in r.output
    assert "styles" not in r.to_dict() and "\x1b" not in str(r.to_dict())
    out = tools.call(
        "bash_exec", {"command": COLOURED, "wait_ms": 20000}, caller_session=session, registry=magics_of(ip).registry
    )
    assert "\x1b" not in str(out) and "styles" not in str(out) and "red <b>$x$ plain" in str(out)


def test_a_running_job_shows_its_colours_so_far(ip: Any) -> None:
    """A live view's snapshot of a running job: its lines and its unfinished
    last line keep their colours."""
    reg = magics_of(ip).registry
    job = ip.run_line_magic(
        "bash_exec", r"--timeout 0 printf '\e[32mdone\e[0m\n\e[1mpart'; exec sleep 60"
    )
    try:
        r = wait_until(
            lambda: (s := reg.result(str(job), tail_lines=10)) and s.output.endswith("part") and s, 20
        )
        assert output_colours(reg, r) == {
            0: '<span style="color:#00cd00">done</span>',
            1: '<span style="font-weight:bold">part</span>',
        }
    finally:
        reg.interrupt(job._job.owner)
        job._job.wait(20)


def test_a_line_wider_than_the_screen_keeps_its_colour(ip: Any) -> None:
    reg = magics_of(ip).registry
    cols = reg.screen(magics_of(ip).session)["cols"]
    r = ip.run_line_magic("bash_exec", rf"--timeout 20 printf '\e[34m%0{cols + 30}d\e[0m\n' 7")
    colours = output_colours(reg, r)
    assert list(colours) == [0]
    assert colours[0].startswith('<span style="color:#0000ee">0000') and colours[0].count("0") >= cols


class _CountingScreens:
    """The real registry, counting its ``screen`` calls (a screen is a round trip
    through the host when terminals live there)."""

    def __init__(self, registry: Any) -> None:
        self.registry = registry
        self.screens = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.registry, name)

    def screen(self, *args: Any, **kwargs: Any) -> Any:
        self.screens += 1
        return self.registry.screen(*args, **kwargs)


def test_a_result_without_output_asks_for_no_screen(ip: Any) -> None:
    """issue 34 §5: nothing to colour, so no screen round trip (a quiet cell);
    a result with its own styles needs none either."""
    reg = _CountingScreens(magics_of(ip).registry)
    quiet = ip.run_line_magic("bash_exec", "--timeout 20 true")
    assert output_colours(reg, quiet) == {} and reg.screens == 0
    loud = ip.run_line_magic("bash_exec", r"--timeout 20 printf '\e[32mgreen\e[0m\n'")
    assert output_colours(reg, loud) and reg.screens == 0
    assert output_colours(reg, dataclasses.replace(loud, styles=None)) and reg.screens == 1


def test_bash_read_shows_the_colours_too(ip: Any) -> None:
    ip.run_line_magic("bash_exec", r"--timeout 20 printf '\e[31mred <i>\e[0m\nplain\n'")
    rr = ip.run_line_magic("bash_read", "--lines 2")
    data = ip.display_formatter.format(rr)[0]
    assert _pre(data["text/html"]) == '<span style="color:#cd0000">red &lt;i&gt;</span>\nplain'
    assert "\x1b" not in data["text/plain"] and "styles" not in rr.to_dict()
