"""What keeping a screen costs the engine: ``seq 1 N`` through the engine
with its screen fed, through the same engine with the screen replaced by a
no-op (this benchmark only: ``JobCore``'s ``Screen`` swapped in-process),
and through a raw PTY; then ``screen()`` after 20 MB of output, and a round
trip. Reps interleaved; best of each; ratios against the raw PTY measured
in the same run (benchmarks/README.md).

    python benchmarks/bench_screen_cost.py [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

from bench_engine import RawPty  # type: ignore[import-not-found]

from dsh_magics.terminal import Registry
from dsh_magics.terminal.core import jobcore
from dsh_magics.terminal.screen import Screen


class _NoScreen(Screen):
    """A screen that drops what it is fed (the no-screen baseline)."""

    def feed(self, data: bytes) -> None:
        pass


def _ms(fn: Any) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def measure(quick: bool = False) -> dict[str, Any]:
    seq_n = 500_000 if quick else 3_000_000
    reps = 3
    with_screen = Registry(login=False)
    with_screen.attach("bench")
    real = jobcore.Screen
    jobcore.Screen = _NoScreen  # type: ignore[misc]
    try:
        without = Registry(login=False)
        without.attach("bench")
    finally:
        jobcore.Screen = real  # type: ignore[misc]
    raw = RawPty()
    cmd = f"seq 1 {seq_n}"
    times: dict[str, list[float]] = {"screen": [], "no_screen": [], "raw_pty": []}
    try:
        for _ in range(reps):
            times["screen"].append(_ms(lambda: with_screen.exec("bench", cmd, wait_ms=600_000)))
            times["no_screen"].append(_ms(lambda: without.exec("bench", cmd, wait_ms=600_000)))
            times["raw_pty"].append(_ms(lambda: raw.run(cmd)))
        nbytes = sum(len(str(i)) + 1 for i in range(1, seq_n + 1))
        best = {k: min(v) for k, v in times.items()}
        # screen() right after 20 MB of plain output
        big = "yes 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklm | head -c 20000000"
        with_screen.exec("bench", big, wait_ms=600_000)
        screen_ms = _ms(lambda: with_screen.screen("bench"))
        rt = statistics.median(_ms(lambda: with_screen.exec("bench", "true", wait_ms=10_000)) for _ in range(200))
        rt_no = statistics.median(_ms(lambda: without.exec("bench", "true", wait_ms=10_000)) for _ in range(200))
    finally:
        with_screen.close_all()
        without.close_all()
        raw.close()
    return {
        "seq_lines": seq_n,
        "throughput_MBps": {k: nbytes / 1e6 / (v / 1000) for k, v in best.items()},
        "ratio_vs_raw": {"screen": best["raw_pty"] / best["screen"], "no_screen": best["raw_pty"] / best["no_screen"]},
        "screen_vs_no_screen": best["no_screen"] / best["screen"],
        "screen_after_20MB_ms": screen_ms,
        "roundtrip_ms": {"screen": rt, "no_screen": rt_no},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    res = measure(args.quick)
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
