"""The in-band transport's text and scanner, and its pieces run by real bash."""

from __future__ import annotations

import shlex
import subprocess

import pytest

from dsh_magics.terminal.remote import inband, ssh_start
from dsh_magics.terminal.remote.inband import Marker, Scanner, decode_cwd, encode_command

NONCE = "0123456789abcdef"


def test_pieces_are_short_plain_ascii_lines():
    command = "x" * 5000 + "\n" + "é'\\\x03\x7f\t$`\"" * 300
    pieces = encode_command(command)
    assert len(pieces) > 5
    for p in pieces:
        assert len(p) <= inband.PIECE_BYTES + 4
        assert all(0x20 <= ord(c) < 0x7F for c in p), "only printable ASCII reaches the line discipline"


@pytest.mark.parametrize(
    "command",
    ["echo hi", "a'b\\c\"d$e`f", "line1\nline2\n\n", "\t\x01\x1b[31m\x7f", "é ü 日本 🙂", "x" * 3000 + "'" * 2000],
)
def test_pieces_rebuild_the_exact_bytes_in_bash(command):
    pieces = encode_command(command, piece_bytes=100)
    script = f"v=$'{pieces[0]}'\n" + "".join(f"v+=$'{p}'\n" for p in pieces[1:]) + 'printf %s "$v"'
    out = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], capture_output=True, check=True).stdout
    assert out == command.encode()


def test_job_text_lines_stay_below_the_canonical_limit():
    end = "fedcba9876543210"
    text = inband.job_text(NONCE, "echo " + "y" * 100_000, end_nonce=end)
    assert max(len(line.encode()) for line in text.split("\n")) < 2000
    assert text.count(NONCE) == 3  # begin marker, and the frame of the DEBUG trap listing
    assert text.count(end) == 1  # the end marker only


def test_scanner_reads_markers_split_anywhere():
    stream = (
        b"out\r\n\x1b]6973;B;" + NONCE.encode() + b"\x07more\x1b]6973;E;" + NONCE.encode()
        + b";130;/tmp/a\\ b\x07\x1b]6973;P\x07tail"
    )  # fmt: skip
    for cut in range(1, len(stream)):
        s = Scanner()
        pieces = s.feed(stream[:cut]) + s.feed(stream[cut:])
        markers = [p for p in pieces if isinstance(p, Marker)]
        data = b"".join(p for p in pieces if isinstance(p, bytes))
        assert markers == [Marker("B", NONCE), Marker("E", NONCE, 130, "/tmp/a b"), Marker("P", "")]
        assert data == b"out\r\nmoretail"


def test_scanner_passes_malformed_markers_as_data():
    s = Scanner()
    pieces = s.feed(b"\x1b]6973;E;nothex;0\x07x\x1b]6973;X\x07")
    assert not any(isinstance(p, Marker) for p in pieces)


@pytest.mark.parametrize("path", ["/tmp", "/tmp/a b", "/tmp/it's", "/tmp/\x07bell", "/tmp/é", "/t/$x`y`"])
def test_cwd_round_trips_through_printf_q(path):
    q = subprocess.run(
        ["bash", "--noprofile", "--norc", "-c", 'printf %q "$1"', "_", path], capture_output=True, check=True
    ).stdout.decode("utf-8", "surrogateescape")
    assert decode_cwd(q) == path


@pytest.mark.parametrize(
    "command, ok",
    [
        ("echo hi", True),
        ("cat <<EOF\nx\nEOF", True),
        ("cat <<-'E'\n\tx\n\tE\n", True),
        ("cat <<<x", True),
        ("cat <<EOF\nx", False),
        ("echo |", False),
        ("a &&", False),
        ("echo x \\", False),
    ],
)
def test_capture_is_left_out_where_it_would_join_the_command(command, ok):
    assert inband.can_capture(command) is ok
    assert ('__dsh_magics_last=("$?"' in inband.job_text(NONCE, command)) is ok


def _wrapper_output(inner: str) -> tuple[int, bytes]:
    """What the ssh terminal's wrapper prints around a command that stands in
    for bash (run here by a real ``sh``), and how it ends (negative: a signal)."""
    script = ssh_start.wrapped_shell([inner])
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], capture_output=True, timeout=30)
    assert proc.stderr == b"", proc.stderr  # the wrapper itself says nothing (no "Killed")
    return proc.returncode, proc.stdout


@pytest.mark.parametrize(
    "inner, ends",
    [("echo out; exit 3", 3), ("echo out; kill -9 $$", -9), ("echo out; kill -HUP $$", -1), ("echo out", 0)],
)
def test_the_wrapper_says_when_bash_ended_and_ends_as_it_did(inner, ends):
    code, out = _wrapper_output(f"bash --noprofile --norc -c {shlex.quote(inner)}")
    s = inband.Scanner()
    ended = []
    s.on_end = lambda: ended.append(True)
    pieces = s.feed(out)
    assert b"".join(p for p in pieces if isinstance(p, bytes)) == b"out\n"  # both markers taken out
    assert not any(isinstance(p, Marker) for p in pieces)
    assert s.key is not None and len(s.key) == 16 and ended == [True]
    assert code == ends


def test_the_wrappers_nonce_is_new_each_time_and_in_no_argv():
    keys = set()
    for _ in range(3):
        _, out = _wrapper_output("bash --noprofile --norc -c 'cat /proc/$PPID/cmdline /proc/$PPID/environ'")
        s = inband.Scanner()
        data = b"".join(p for p in s.feed(out) if isinstance(p, bytes))
        assert s.key is not None and s.key.encode() not in data  # the wrapper's argv and environment
        keys.add(s.key)
    assert len(keys) == 3


def test_only_the_first_key_before_the_seal_counts():
    key, other = "a" * 16, "b" * 16
    s = inband.Scanner()
    ended = []
    s.on_end = lambda: ended.append(True)
    marker = "\x1b]6973;{};{}\x07".format
    stream = (marker("K", key) + "x" + marker("K", other) + marker("Z", other) + "y").encode()
    for cut in range(1, len(stream)):  # split anywhere
        s = inband.Scanner()
        s.on_end = lambda: ended.append(True)
        pieces = s.feed(stream[:cut]) + s.feed(stream[cut:])
        assert b"".join(p for p in pieces if isinstance(p, bytes)) == b"xy"
        assert s.key == key and ended == []
    # a job prints a key of its own once the shell is ready: sealed, it does not count
    s = inband.Scanner()
    s.on_end = lambda: ended.append(True)
    s.seal()
    assert s.feed(marker("K", other).encode() + marker("Z", other).encode()) == [] and s.key is None
    assert ended == []
    # the real end, once; a second is dropped too
    s = inband.Scanner()
    s.on_end = lambda: ended.append(True)
    s.feed(marker("K", key).encode())
    s.seal()
    assert s.feed((marker("Z", key) + marker("Z", key)).encode()) == [] and ended == [True]
