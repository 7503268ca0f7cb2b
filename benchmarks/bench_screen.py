"""Screen benchmark: what keeping a terminal's screen costs, as ratios against a
raw PTY read measured in the same run, and the emulators compared.

    python benchmarks/bench_screen.py [--quick] [--json PATH] [--scrollback]

1. **PTY throughput** of ``seq 1 3000000`` (22.9 MB; 25.9 MB through the PTY,
   which turns each LF into CR LF) read from a PTY (80x24)
   with ``os.read(fd, 65536)`` until EOF, best of 3, contenders interleaved:
   the raw read (the floor); the same read feeding every chunk to
   ``dsh_magics.terminal.screen.Screen`` (lazy: see its module docstring), with
   a final ``snapshot()`` inside the timing; feeding every chunk to
   libghostty-vt directly (``pyghostty``, eager). ``pyte`` (eager, no
   alternate screen) is measured on ``seq 1 300000`` against the raw read of
   that size, as it is too slow for the big run. Coloured output, which the
   lazy screen parses whole: ``grep --color=always 7`` over ``seq 1 1500000``'s
   lines, raw and with the screen.
2. **Emulator alone** on bytes in memory, fed in 4095-byte pieces (what a
   PTY read returns): plain lines (``seq``'s output), coloured lines (every
   line has SGR codes and an erase, as ``grep --color`` writes), and full-screen
   redraws (cursor addressing, colours, erase-to-end on every row of an 80x24
   frame, as ``top`` or a curses app redraws). MB/s for ``Screen``, eager
   libghostty-vt, ``pyte`` and, when installed, ``pyavt`` and ``vt100wasm``
   (other candidates, not dependencies).
3. **snapshot()** time after 20 MB of output (plain, and coloured), text only
   and with styles; median of 5.
4. ``--scrollback``: libghostty-vt's plain-line speed by its scrollback limit
   (why ``screen.SCROLLBACK_LINES`` is 2000).
"""

from __future__ import annotations

import argparse
import codecs
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

from ptyprocess import PtyProcess

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dsh_magics.terminal.screen import SCROLLBACK_LINES, Screen  # noqa: E402

COLS, ROWS = 80, 24
ESC = "\x1b"
Feed = Callable[[bytes], object]


# -- contenders -----------------------------------------------------------------


def make_screen() -> tuple[Feed, Callable[[], object]]:
    s = Screen(COLS, ROWS)
    return s.feed, s.snapshot


def make_ghostty() -> tuple[Feed, Callable[[], object]]:
    import pyghostty  # type: ignore[import-untyped]

    t = pyghostty.Terminal(COLS, ROWS, scrollback=SCROLLBACK_LINES)
    return t.feed, t.text


def make_pyte() -> tuple[Feed, Callable[[], object]]:
    import pyte

    screen = pyte.Screen(COLS, ROWS)
    stream = pyte.ByteStream(screen)
    return stream.feed, lambda: screen.display


def make_avt() -> tuple[Feed, Callable[[], object]]:
    import avt  # type: ignore[import-not-found]

    vt = avt.Vt(COLS, ROWS, scrollback_limit=100)
    dec = codecs.getincrementaldecoder("utf-8")("replace")
    return (lambda b: vt.feed_str(dec.decode(b))), vt.text


def make_vt100wasm() -> tuple[Feed, Callable[[], object]]:
    import vt100wasm  # type: ignore[import-not-found]

    s = vt100wasm.Screen(ROWS, COLS, 0)
    return s.process, s.contents


EMULATORS: dict[str, Callable[[], tuple[Feed, Callable[[], object]]]] = {
    "Screen (lazy, libghostty-vt)": make_screen,
    "libghostty-vt eager (pyghostty)": make_ghostty,
    "pyte eager": make_pyte,
    "pyavt eager": make_avt,
    "vt100wasm eager": make_vt100wasm,
}
SLOW = {"pyte eager"}  # measured on 1 MB, not 20 MB


def available(name: str) -> bool:
    try:
        EMULATORS[name]()
        return True
    except ImportError:
        return False


# -- 1. PTY throughput ------------------------------------------------------------


def pty_read(
    n: int, make: Callable[[], tuple[Feed, Callable[[], object]]] | None, argv: list[str] | None = None
) -> tuple[float, int]:
    """MB/s of ``seq 1 n`` (or ``argv``) read from a PTY, each chunk fed to
    ``make``'s emulator (and a final look at its screen), or nothing for the floor."""
    feed, look = make() if make else (None, None)
    p = PtyProcess.spawn(argv or ["seq", "1", str(n)], dimensions=(ROWS, COLS))
    fd, total = p.fd, 0
    t0 = time.perf_counter()
    while True:
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        total += len(data)
        if feed is not None:
            feed(data)
    if look is not None:
        look()
    dt = time.perf_counter() - t0
    p.close(force=True)
    return total / dt / 1e6, total


def measure_pty(quick: bool) -> dict:
    reps = 1 if quick else 3
    big = 300_000 if quick else 3_000_000
    small = 30_000 if quick else 300_000
    rows: dict[str, dict[str, float]] = {}
    # Coloured output: grep --color=always marking every "7" in seq's lines.
    numbers = tempfile.NamedTemporaryFile(prefix="bench-screen-", suffix=".txt", delete=False)
    with numbers:
        numbers.write(b"".join(b"%d\n" % i for i in range(1, big // 2)))
    grep = ["grep", "--color=always", "7", numbers.name]

    def run(label: str, n: int, make, argv: list[str] | None = None) -> None:
        best = rows.setdefault(label, {"n": n, "mb_s": 0.0})
        mbs, total = pty_read(n, make, argv)
        best["mb_s"] = max(best["mb_s"], mbs)
        best["mb"] = total / 1e6

    try:
        for _ in range(reps):  # interleaved
            run("raw PTY", big, None)
            run("Screen (lazy, libghostty-vt)", big, make_screen)
            run("libghostty-vt eager (pyghostty)", big, make_ghostty)
            run("raw PTY (coloured grep)", big // 2, None, grep)
            run("Screen (coloured grep)", big // 2, make_screen, grep)
            run("raw PTY (small)", small, None)
            run("pyte eager (small)", small, make_pyte)
    finally:
        os.unlink(numbers.name)
    for label, row in rows.items():
        floor_label = "raw PTY"
        if "small" in label:
            floor_label = "raw PTY (small)"
        elif "coloured" in label:
            floor_label = "raw PTY (coloured grep)"
        row["ratio"] = row["mb_s"] / rows[floor_label]["mb_s"]
    return rows


# -- 2. emulators alone -------------------------------------------------------------


def plain_lines(n_bytes: int) -> bytes:
    out, i, total = [], 1, 0
    while total < n_bytes:
        s = b"%d\r\n" % i
        out.append(s)
        total += len(s)
        i += 1
    return b"".join(out)


def coloured_lines(n_bytes: int) -> bytes:
    out, i, total = [], 1, 0
    while total < n_bytes:
        s = b"\x1b[35m\x1b[Ksrc/file%d.py\x1b[m\x1b[K:\x1b[32m\x1b[K%d\x1b[m\x1b[K: matched \x1b[01;31m\x1b[Kword\x1b[m\x1b[K here\r\n" % (i % 97, i)
        out.append(s)
        total += len(s)
        i += 1
    return b"".join(out)


def redraw_frames(n_bytes: int) -> bytes:
    out, total, k = [], 0, 0
    while total < n_bytes:
        parts = [ESC + "[H"]
        for r in range(1, ROWS + 1):
            text = f"{r:3d} {k:8d} task-{(r * 7919 + k) % 10007:05d} {'#' * ((r + k) % 40)}"
            parts.append(f"{ESC}[{r};1H{ESC}[1;{31 + (r + k) % 7}m{text[:COLS]}{ESC}[0m{ESC}[K")
        s = "".join(parts).encode()
        out.append(s)
        total += len(s)
        k += 1
    return b"".join(out)


def feed_rate(make, data: bytes) -> float:
    feed, look = make()
    pieces = [data[i : i + 4095] for i in range(0, len(data), 4095)]
    t0 = time.perf_counter()
    for piece in pieces:
        feed(piece)
    look()
    return len(data) / (time.perf_counter() - t0) / 1e6


def measure_emulators(quick: bool) -> dict:
    size = 2_000_000 if quick else 20_000_000
    slow_size = 200_000 if quick else 1_000_000
    inputs = {"plain lines": plain_lines, "coloured lines": coloured_lines, "full-screen redraws": redraw_frames}
    data = {k: f(size) for k, f in inputs.items()}
    small = {k: v[:slow_size] for k, v in data.items()}
    out: dict[str, dict[str, float]] = {}
    for name, make in EMULATORS.items():
        if not available(name):
            continue
        row = out.setdefault(name, {})
        for kind in inputs:
            row[kind] = feed_rate(make, (small if name in SLOW else data)[kind])
        row["mb_fed"] = (slow_size if name in SLOW else size) / 1e6
    return out


# -- 3. snapshot after 20 MB ------------------------------------------------------------


def measure_snapshot(quick: bool) -> dict:
    size = 2_000_000 if quick else 20_000_000
    out = {}
    for kind, make in (("plain", plain_lines), ("coloured", coloured_lines)):
        data = make(size)
        for styles in (False, True):
            times = []
            for _ in range(5):
                s = Screen(COLS, ROWS)
                for i in range(0, len(data), 4095):
                    s.feed(data[i : i + 4095])
                t0 = time.perf_counter()
                s.snapshot(styles=styles)
                times.append((time.perf_counter() - t0) * 1000)
            out[f"{kind}, {'styles' if styles else 'text'}"] = statistics.median(times)
    return out


def measure_scrollback() -> dict:
    import pyghostty

    data = plain_lines(5_000_000)
    out = {}
    for sb in (0, 100, 1000, 2000, 10000):
        t = pyghostty.Terminal(COLS, ROWS, scrollback=sb)
        t0 = time.perf_counter()
        for i in range(0, len(data), 4095):
            t.feed(data[i : i + 4095])
        out[sb] = len(data) / (time.perf_counter() - t0) / 1e6
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", metavar="PATH")
    ap.add_argument("--scrollback", action="store_true")
    args = ap.parse_args()
    result: dict = {"load_before": os.getloadavg(), "quick": args.quick}
    warm = Screen(COLS, ROWS)  # cffi parses its C types on first use (~50 ms once)
    warm.feed(coloured_lines(10_000) + redraw_frames(10_000))
    warm.snapshot(styles=True)
    t0 = time.monotonic()
    if args.scrollback:
        result["scrollback"] = measure_scrollback()
        print("libghostty-vt plain lines by scrollback limit (MB/s):")
        for sb, mbs in result["scrollback"].items():
            print(f"  {sb:>6} lines  {mbs:7.1f}")
    result["pty"] = measure_pty(args.quick)
    print("PTY throughput, read from an 80x24 PTY (best of runs):")
    for label, row in result["pty"].items():
        print(f"  {label:36s} {row['mb']:5.1f} MB  {row['mb_s']:7.1f} MB/s  {row['ratio']:.2f}x floor")
    result["emulators"] = measure_emulators(args.quick)
    print("Emulator alone, MB/s (4095-byte pieces):")
    print(f"  {'':36s} {'plain':>8} {'coloured':>9} {'redraws':>8}  fed")
    for name, row in result["emulators"].items():
        print(
            f"  {name:36s} {row['plain lines']:8.1f} {row['coloured lines']:9.1f} "
            f"{row['full-screen redraws']:8.1f}  {row['mb_fed']:.0f} MB"
        )
    result["snapshot_ms"] = measure_snapshot(args.quick)
    print("Screen.snapshot() after 20 MB of output, median ms:")
    for label, ms in result["snapshot_ms"].items():
        print(f"  {label:20s} {ms:8.2f}")
    result["load_after"] = os.getloadavg()
    result["seconds"] = round(time.monotonic() - t0, 1)
    print(f"load {result['load_before'][0]:.2f} -> {result['load_after'][0]:.2f}, {result['seconds']} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=2, default=str)


if __name__ == "__main__":
    main()
