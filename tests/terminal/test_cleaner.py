from dsh_magics.terminal.core.cleaner import Cleaner, clean


def test_strips_csi_osc_and_charset_sequences():
    raw = b"\x1b[1;31mred\x1b[0m \x1b]0;title\x07t \x1b(Bok\x1b[?2004h\n"
    assert clean(raw) == "red t ok\n"


def test_escape_split_across_reads_is_still_stripped():
    c = Cleaner()
    assert c.feed(b"a\x1b[3") == "a"
    assert c.feed(b"1mb") == "b"


def test_invalid_utf8_is_replaced_never_raises():
    assert clean(b"ok \xff\xfe end") == "ok \ufffd\ufffd end"


def test_multibyte_char_split_across_reads():
    c = Cleaner()
    data = "héllo→".encode()
    out = "".join(c.feed(data[i : i + 1]) for i in range(len(data))) + c.flush()
    assert out == "héllo→"


def test_control_bytes_other_than_newline_cr_bs_tab_are_removed():
    assert clean(b"a\x00b\x07c\td\r\n\x08") == "abc\td\r\n\x08"


def test_any_split_into_reads_cleans_as_the_whole():
    """Reads without control bytes take a fast path; mixed with escapes, bad
    UTF-8 and controls cut anywhere, the result is the one-shot one."""
    import random

    pieces = [b"ab", b"\r\n", b"\x1b[1m", b"\x1b]0;t\x07", b"\x07", b"\xe4\xb8\xad", b"\xff", b"\x7f", b"\x00", b"\t"]
    for seed in range(500):
        rnd = random.Random(seed)
        data = b"".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 40)))
        cuts = sorted(rnd.sample(range(len(data) + 1), min(len(data) + 1, rnd.randint(0, 5))))
        c = Cleaner()
        out = "".join(c.feed(data[a:b]) for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)) + c.flush()
        assert out == clean(data), (seed, data, cuts)
