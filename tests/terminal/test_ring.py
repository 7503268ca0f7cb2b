from dsh_magics.terminal.core.ring import Ring


def test_lines_are_numbered_monotonically_and_dropped_are_counted():
    r = Ring(max_lines=10)
    r.feed("".join(f"{i}\n" for i in range(25)))
    assert r.next_line == 25
    assert r.first_line == 15
    lines, dropped = r.get(0)
    assert lines == [str(i) for i in range(15, 25)]
    assert dropped == 15
    lines, dropped = r.get(20, 22)
    assert lines == ["20", "21"] and dropped == 0


def test_carriage_return_overwrites_like_a_terminal():
    r = Ring()
    r.feed("".join(f"\r{i:>6}%" for i in range(100_000)) + "\n")
    assert r.get(0)[0] == [" 99999%"]
    r.feed("abcdef\rXY\n")
    assert r.get(1)[0] == ["XYcdef"]


def test_crlf_split_across_feeds_is_one_newline():
    r = Ring()
    r.feed("hello\r")
    r.feed("\nworld\r\n")
    assert r.get(0)[0] == ["hello", "world"]


def test_backspace_moves_cursor_left():
    r = Ring()
    r.feed("abc\b\bX\n")
    assert r.get(0)[0] == ["aXc"]


def test_partial_line_is_kept_and_finished_on_demand():
    r = Ring()
    r.feed("no newline")
    assert r.partial == "no newline" and r.next_line == 0
    assert r.finish_partial() is True
    assert r.get(0)[0] == ["no newline"]
    assert r.finish_partial() is False


def test_huge_line_is_wrapped_and_memory_stays_bounded():
    r = Ring(max_lines=4000, max_chars=1_000_000, max_line_chars=65_536)
    for _ in range(100):
        r.feed("x" * 100_000)
    assert len(r.partial) <= 65_536
    total = sum(len(line) for line in r.get(0)[0])
    assert total <= 2_000_000
    assert r.next_line > 100


def test_any_split_into_feeds_gives_the_lines_of_the_whole():
    """CR LF lines take a one-split fast path; mixed with bare LF, lone CR
    and backspace, cut anywhere (a CR LF too), the lines are the same."""
    import random

    pieces = ["ab", "\r\n", "\n", "\r", "\b", "x", "\u00e9"]
    for seed in range(500):
        rnd = random.Random(seed)
        text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 50)))
        cuts = sorted(rnd.sample(range(len(text) + 1), min(len(text) + 1, rnd.randint(0, 5))))
        whole, split = Ring(8), Ring(8)
        whole.feed(text)
        for a, b in zip([0, *cuts], [*cuts, len(text)], strict=True):
            split.feed(text[a:b])
        assert (split.get(0), split.next_line) == (whole.get(0), whole.next_line), (seed, text, cuts)
        split.finish_partial()
        whole.finish_partial()
        assert split.get(0) == whole.get(0), (seed, text, cuts)
