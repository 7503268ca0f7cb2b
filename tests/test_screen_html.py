"""A screen snapshot as HTML (dsh_magics.notebook.screen_html): literal text, colours,
inverse cells, the cursor."""

from __future__ import annotations

import html
import re

from dsh_magics.notebook.render import LITERAL
from dsh_magics.notebook.screen_html import palette, screen_html
from dsh_magics.terminal.screen import Screen


def _html(data: bytes, cols: int = 30, rows: int = 4, styles: bool = True) -> str:
    screen = Screen(cols, rows)
    screen.feed(data)
    return screen_html(screen.snapshot(styles=styles))


def _text(fragment: str) -> str:
    """What a browser shows as text (tags dropped, entities decoded)."""
    body = re.sub(r"<style>.*?</style>", "", fragment)
    return html.unescape(re.sub(r"<[^>]+>", "", body))


def test_text_stays_literal():
    nasty = b"$x^2$ <b>bold</b> &amp; \\(y\\) <script>alert(1)</script>"
    out = _html(nasty, cols=80)
    assert "<b>" not in out and "<script>" not in out
    assert "$x^2$ <b>bold</b> &amp; \\(y\\) <script>alert(1)</script>" in _text(out)
    root = re.match(r'<div class="([^"]*)"', out)
    assert root and set(LITERAL.split()) <= set(root.group(1).split())
    assert "mathjax_ignore" in root.group(1) and "tex2jax_ignore" in root.group(1)
    assert "<pre" in out and "<code>" in out


def _code(fragment: str) -> str:
    m = re.search(r"<code>(.*)</code>", fragment, re.S)
    assert m
    return _text(m.group(1))


def test_every_row_is_there_in_order():
    out = _html(b"one\r\ntwo\r\n\r\nfour", rows=4)
    assert [r.rstrip() for r in _code(out).split("\n")] == ["one", "two", "", "four"]


def test_colours_bold_underline_and_inverse():
    out = _html(b"\x1b[1;31;44mA\x1b[0m\x1b[4mU\x1b[0m\x1b[7mI\x1b[0m\x1b[38;5;208mP\x1b[0m")
    assert re.search(r'style="color:#cd0000;background:#0000ee;font-weight:bold">A<', out)
    assert re.search(r'style="text-decoration:underline">U<', out)
    # inverse with default colours: the default background becomes the text colour
    assert re.search(r'style="color:#ffffff;background:#1f2328">I<', out)
    assert re.search(rf'style="color:{palette(208)}">P<', out)


def test_cursor_is_marked_where_it_is_and_hidden_when_hidden():
    out = _html(b"ab\x1b[1;2H")
    assert re.search(r'<span class="dsh-screen-cursor">b</span>', out)
    out = _html(b"abc")
    assert _code(out).split("\n")[0].startswith("abc ")
    assert out.count('<span class="dsh-screen-cursor"> </span>') == 1
    assert 'class="dsh-screen-cursor"' not in _html(b"ab\x1b[?25l")


def test_cursor_after_wide_characters_counts_cells():
    out = _html("\u4e2d\u6587x".encode() + b"\x1b[1;5H")
    assert '<span class="dsh-screen-cursor">x</span>' in out


def test_without_styles_it_still_renders_plain_rows():
    out = _html(b"plain <i>", styles=False)
    assert _code(out).split("\n")[0].rstrip() == "plain <i>"


def test_palette_matches_xterm():
    assert palette(1) == "#cd0000"
    assert palette(16) == "#000000"
    assert palette(196) == "#ff0000"
    assert palette(231) == "#ffffff"
    assert palette(232) == "#080808"
    assert palette(255) == "#eeeeee"


def test_alternate_screen_and_title_in_the_caption():
    out = _html(b"\x1b]2;<t>\x07\x1b[?1049hfull")
    assert "alternate screen" in out
    assert "&lt;t&gt;" in out and "<t>" not in out
