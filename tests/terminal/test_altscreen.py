"""The alternate-screen gate: full-screen drawing is kept from the line ring,
whatever the read boundaries."""

from dsh_magics.terminal.core.altscreen import AltScreenGate

DATA = b"before\r\n\x1b[?1049h\x1b[Hdrawn ~\r\n~\x1b[?1049lafter\r\n"


def ring_bytes(pieces: list[bytes]) -> bytes:
    gate = AltScreenGate()
    out = b""
    for data in pieces:
        for piece, on_alt, _switch in gate.split(data):
            if not on_alt:
                out += piece
    return out


def test_drawing_on_the_alternate_screen_skips_the_ring_at_every_cut() -> None:
    for cut in range(len(DATA) + 1):
        got = ring_bytes([DATA[:cut], DATA[cut:]])
        assert b"drawn" not in got and b"~" not in got, cut
        assert got.startswith(b"before\r\n") and got.endswith(b"after\r\n"), cut


def test_modes_set_together_and_47_count() -> None:
    assert ring_bytes([b"a\x1b[?1;47hx\x1b[?47lb"]) == b"a\x1b[?1;47hb"


def test_other_private_modes_pass() -> None:
    assert ring_bytes([b"\x1b[?25lx\x1b[?1hy"]) == b"\x1b[?25lx\x1b[?1hy"
