from dsh_magics.terminal.core.markers import Marker, MarkerScanner


def _feed_all(chunks):
    s = MarkerScanner()
    out = []
    for c in chunks:
        out.extend(s.feed(c))
    return out


def test_marker_split_at_every_byte_boundary_is_found():
    data = b"before\x1b]6973;E;0123456789abcdef;7\x07after"
    for cut in range(1, len(data)):
        out = _feed_all([data[:cut], data[cut:]])
        text = b"".join(p for p in out if isinstance(p, bytes))
        markers = [p for p in out if isinstance(p, Marker)]
        assert text == b"beforeafter", cut
        assert markers == [Marker("E", "0123456789abcdef", 7)], cut


def test_malformed_lookalike_is_data():
    out = _feed_all([b"x\x1b]6973;E;nothex\x07y"])
    assert not any(isinstance(p, Marker) for p in out)


def test_prompt_hint_has_no_nonce_and_splits_anywhere():
    data = b"a\x1b]6973;P\x07b"
    for cut in range(1, len(data)):
        out = _feed_all([data[:cut], data[cut:]])
        assert b"".join(p for p in out if isinstance(p, bytes)) == b"ab", cut
        assert [p for p in out if isinstance(p, Marker)] == [Marker("P", "")], cut
    assert not any(isinstance(p, Marker) for p in _feed_all([b"\x1b]6973;P;0123456789abcdef\x07"]))
