"""What keeping a screen costs the engine: ``seq 1 N`` through the engine
with its screen fed, through the same engine with the screen replaced by a
no-op (this benchmark only: ``JobCore``'s ``Screen`` swapped in-process),
and through a raw PTY; then ``screen()`` after 20 MB of output, and a round
trip. Ratios against the raw PTY measured in the same run
(benchmarks/README.md).

Each contender runs once untimed first (one-time costs: the emulator
binding parses its C types the first time each is used, see
``first_screen_ms``). Then ``--reps`` rounds, the order rotated each round so
load that comes and goes hits all three alike; best and median of each,
wall time and this process's CPU time (the engine's reader thread, or the
raw loop: CPU is much less sensitive to other work on the machine than
wall time). ``screen()`` is timed on a process that has looked once
already, right after each of three 20 MB jobs; the round trips alternate
between the two engines. The load average is reported before and after.

    python benchmarks/bench_screen_cost.py [--quick] [--reps N] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
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


def _timed(fn: Any) -> tuple[float, float]:
    """Wall and CPU seconds of ``fn()`` (CPU: this whole process)."""
    c, t = time.process_time(), time.perf_counter()
    fn()
    return time.perf_counter() - t, time.process_time() - c


def measure(quick: bool = False, reps: int = 5) -> dict[str, Any]:
    seq_n = 500_000 if quick else 3_000_000
    load_before = os.getloadavg()
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
    runs: dict[str, Any] = {
        "screen": lambda: with_screen.exec("bench", cmd, wait_ms=600_000),
        "no_screen": lambda: without.exec("bench", cmd, wait_ms=600_000),
        "raw_pty": lambda: raw.run(cmd),
    }
    times: dict[str, list[tuple[float, float]]] = {k: [] for k in runs}
    try:
        first_screen_ms = _ms(lambda: with_screen.screen("bench"))
        for fn in runs.values():
            fn()  # untimed: one-time costs
        order = list(runs)
        for i in range(reps):
            for name in order[i % 3 :] + order[: i % 3]:
                times[name].append(_timed(runs[name]))
        nbytes = sum(len(str(i)) + 1 for i in range(1, seq_n + 1))
        best = {k: min(w for w, _ in v) for k, v in times.items()}
        median = {k: statistics.median(w for w, _ in v) for k, v in times.items()}
        cpu = {k: statistics.median(c for _, c in v) for k, v in times.items()}
        # screen() right after 20 MB of plain output (the process has looked once already)
        big = "yes 0123456789abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklm | head -c 20000000"
        after_20mb = []
        for _ in range(3):
            with_screen.exec("bench", big, wait_ms=600_000)
            after_20mb.append(_ms(lambda: with_screen.screen("bench")))
        styles_ms = _ms(lambda: with_screen.screen("bench", styles=True))
        rts: dict[str, list[float]] = {"screen": [], "no_screen": []}
        for _ in range(200):
            rts["screen"].append(_ms(lambda: with_screen.exec("bench", "true", wait_ms=10_000)))
            rts["no_screen"].append(_ms(lambda: without.exec("bench", "true", wait_ms=10_000)))
    finally:
        with_screen.close_all()
        without.close_all()
        raw.close()
    return {
        "seq_lines": seq_n,
        "reps": reps,
        "load_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
        "throughput_MBps_best": {k: nbytes / 1e6 / v for k, v in best.items()},
        "throughput_MBps_median": {k: nbytes / 1e6 / v for k, v in median.items()},
        "wall_s_all": {k: [round(w, 3) for w, _ in v] for k, v in times.items()},
        "ratio_vs_raw_best": {k: best["raw_pty"] / best[k] for k in ("screen", "no_screen")},
        "ratio_vs_raw_median": {k: median["raw_pty"] / median[k] for k in ("screen", "no_screen")},
        "cpu_s_median": cpu,
        "screen_vs_no_screen_best": best["no_screen"] / best["screen"],
        "first_screen_ms": first_screen_ms,
        "screen_after_20MB_ms": after_20mb,
        "screen_styles_after_20MB_ms": styles_ms,
        "roundtrip_ms_median": {k: statistics.median(v) for k, v in rts.items()},
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    res = measure(args.quick, args.reps)
    print(json.dumps(res, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
