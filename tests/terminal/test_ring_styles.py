"""The ring keeps colours beside its plain lines (issue 36): SGR sequences the
cleaner left in are taken out of the text and kept as runs per line; the lines
are exactly those plain text would give, however the reads are split."""

from __future__ import annotations

import random

from dsh_magics.terminal.core import ring as ring_mod
from dsh_magics.terminal.core.cleaner import Cleaner, clean
from dsh_magics.terminal.core.ring import Ring
from dsh_magics.terminal.core.sgr import apply

RED = (1, None, False, False, False)


def _fed(*chunks: bytes, **kw: int) -> Ring:
    ring, cleaner = Ring(**kw), Cleaner(keep_sgr=True)
    for chunk in chunks:
        ring.feed(cleaner.feed(chunk))
    return ring


def test_colours_are_kept_beside_plain_lines_across_reads() -> None:
    ring = _fed(b"x \x1b[31mRED\x1b[0m y\n\x1b[38;5;2", b"08mor", b"ange\x1b[0m\n\x1b[1;4mbo\rBO\x1b[m\n\x1b[38;2;1;2;3mtr")
    assert ring.get(0) == (["x RED y", "orange", "BO"], 0) and ring.partial == "tr"
    assert ring.styles(0) == {
        0: ((2, 5, RED),),
        1: ((0, 6, (208, None, False, False, False)),),
        2: ((0, 2, (None, None, True, True, False)),),
    }
    assert ring.partial_styles() == ((0, 2, ("#010203", None, False, False, False)),)
    assert ring.style_rows(1, partial=True) == [
        [0, 0, 6, 208, None, False, False, False],
        [1, 0, 2, None, None, True, True, False],
        [2, 0, 2, "#010203", None, False, False, False],
    ]


def test_the_pen_carries_over_lines_until_reset_then_the_plain_path_resumes() -> None:
    ring = _fed(b"\x1b[31m1\n2\n", b"3\x1b[0m\n4\n")
    assert ring.styles(0) == {0: ((0, 1, RED),), 1: ((0, 1, RED),), 2: ((0, 1, RED),)}
    assert ring._pen is None and ring._pstyles is None  # plain text costs nothing again


def test_sgr_forms() -> None:
    assert apply(None, "31;1") == (1, None, True, False, False)
    assert apply(None, "38;5;208;48;2;1;2;3") == (208, "#010203", False, False, False)
    assert apply(None, "38:2::10:20:30") == ("#0a141e", None, False, False, False)
    assert apply(None, "4:3;7;94") == (12, None, False, True, True)
    assert apply(apply(None, "1;4;31"), "22;24;39") is None
    assert apply(apply(None, "31"), "") is None
    assert apply(None, "38;5") is None and apply(None, "99999999999;38;2;1") is None


def test_styled_text_gives_the_lines_plain_text_gives() -> None:
    """The same text with and without SGR sequences, split into reads at random,
    with carriage returns, backspaces, wrapping of long lines and finished
    partial lines: the same lines, partial and numbering."""
    for seed in range(3000):
        rnd = random.Random(seed)
        text = "".join(rnd.choice("abcd\r\n\b\n") for _ in range(rnd.randint(0, 200)))
        cuts = sorted(rnd.sample(range(len(text) + 1), min(len(text) + 1, rnd.randint(0, 8))))
        chunks = [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        kw = {"max_lines": rnd.choice([3, 50]), "max_line_chars": rnd.choice([4, 1000])}
        plain, styled = Ring(**kw), Ring(**kw)
        for chunk in chunks:
            plain.feed(chunk)
            k = rnd.randint(0, len(chunk))
            styled.feed(chunk[:k] + rnd.choice(["\x1b[m", "\x1b[31m", "\x1b[0;1m"]) + chunk[k:])
            if rnd.random() < 0.1:
                assert plain.finish_partial() == styled.finish_partial()
            assert (plain.get(0), plain.partial, plain.next_line) == (
                styled.get(0),
                styled.partial,
                styled.next_line,
            ), (seed, chunks)
        for n, runs in styled.styles(0).items():
            line = styled.get(n, n + 1)[0][0]
            assert all(0 <= a < b <= len(line) for a, b, _ in runs)


def test_styles_are_bounded_and_follow_the_lines_out() -> None:
    ring = Ring(max_lines=10)
    for i in range(50):
        ring.feed(f"\x1b[31m{i}\x1b[0m\n")
    assert set(ring.styles(0)) == set(range(40, 50))
    assert len(ring._styles) <= 11
    old = ring_mod.MAX_STYLE_RUNS
    ring_mod.MAX_STYLE_RUNS = 6
    try:
        big = Ring(max_lines=100)
        for _ in range(20):
            big.feed("".join(f"\x1b[3{k % 7 + 1}m{k}" for k in range(3)) + "\x1b[0m\n")
        assert big._style_runs == 6 and set(big.styles(0)) == {18, 19}
    finally:
        ring_mod.MAX_STYLE_RUNS = old
    ring.clear()
    assert ring.styles(0) == {} and ring._pen is None


def test_a_wrapped_long_line_keeps_its_colours() -> None:
    ring = _fed(b"\x1b[32m" + b"g" * 10 + b"\x1b[0m" + b"p" * 5, b"\n", max_line_chars=6)
    assert ring.get(0) == (["gggggg", "ggggpp", "ppp"], 0)
    green = (2, None, False, False, False)
    assert ring.styles(0) == {0: ((0, 6, green),), 1: ((0, 4, green),)}


def test_one_shot_cleaning_still_strips_colours() -> None:
    assert clean(b"a\x1b[31mred\x1b[0m\x1b[?25l") == "ared"
    keep = Cleaner(keep_sgr=True)
    assert keep.feed(b"\x1b[31mr\x1b[?25l\x1b]0;t\x07\x1b\x1b[m\x00") == "\x1b[31mr\x1b[m"


def test_whole_lines_at_once_give_the_styles_one_token_at_a_time_gives() -> None:
    """A read of whole coloured lines is kept raw and parsed when asked for;
    its runs, the partial line's and the pen after it are those the same text
    fed one character or sequence at a time gives."""
    tokens = ["a", "bc", "\n", "\r\n", "\x1b[31m", "\x1b[0m", "\x1b[1m", "\x1b[m", "\x1b[38;5;9m", "\r", "\b", "\x1b[4;32m"]
    for seed in range(2000):
        rnd = random.Random(seed)
        parts = [rnd.choice(tokens) for _ in range(rnd.randint(0, 80))]
        whole, single = Ring(), Ring()
        whole.feed("".join(parts))
        for part in parts:
            single.feed(part)
        assert (whole.get(0), whole.partial) == (single.get(0), single.partial), seed
        assert whole.styles(0) == single.styles(0), seed
        assert whole.partial_styles() == single.partial_styles() and whole._pen == single._pen, seed


def test_kept_blocks_follow_their_lines_out() -> None:
    ring = Ring(max_lines=10)
    for _ in range(5):
        ring.feed("".join(f"\x1b[31m{i}\x1b[0m\n" for i in range(20)))
    assert len(ring._blocks) == 1 and set(ring.styles(0)) == set(range(90, 100))


def test_a_result_carries_the_styles_of_its_last_lines_only() -> None:
    ring = Ring()
    ring.feed("".join(f"\x1b[31m{i}\x1b[0m\n" for i in range(3000)))
    rows = ring.style_rows(0)
    assert len(rows) == ring_mod.STYLED_RESULT_LINES and [r[0] for r in rows[:2]] == [2000, 2001]
    assert rows[-1] == [2999, 0, 4, 1, None, False, False, False]
    assert [r[0] for r in ring.style_rows(500, 1000)] == list(range(0, 500))
