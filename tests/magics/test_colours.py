"""Colours of ordinary job output in HTML views (issue 36), real bash in-process:
the engine keeps a job's lines without ANSI and its screen keeps the styles, so
the HTML of a result takes 16, 256 and true colours, bold and underline from the
rows the screen still shows; text/plain stays plain, and text stays escaped."""

from __future__ import annotations

import re
from typing import Any

from dsh_magics.notebook import render
from dsh_magics.notebook.values import output_colours
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


def test_colours_never_go_on_the_wrong_lines(ip: Any) -> None:
    reg = magics_of(ip).registry
    first = ip.run_line_magic("bash_exec", r"--timeout 20 printf '\e[32mgreen\e[0m\n'")
    assert output_colours(reg, first)  # while the screen shows it
    ip.run_line_magic("bash_exec", r"--timeout 20 printf '\e[31mgreen\e[0m\n'")
    # an older result: its lines are no longer what the screen shows for it
    assert output_colours(reg, first) == {}
    assert "<span" not in _pre(render.result_html(first, styled=output_colours(reg, first)))


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
    """issue 34 §5: nothing to colour, so no screen round trip (a quiet cell)."""
    reg = _CountingScreens(magics_of(ip).registry)
    quiet = ip.run_line_magic("bash_exec", "--timeout 20 true")
    assert output_colours(reg, quiet) == {} and reg.screens == 0
    loud = ip.run_line_magic("bash_exec", r"--timeout 20 printf '\e[32mgreen\e[0m\n'")
    assert output_colours(reg, loud) and reg.screens == 1
