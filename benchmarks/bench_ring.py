"""The output ring keeping colours (issue 36) against the ring before it, in the same run.

    python benchmarks/bench_ring.py [--quick] [--json]

"Before" is the cleaner and ring of commit eb21d32 (ANSI stripped, no styles),
loaded from git; "after" is today's (``Cleaner(keep_sgr=True)`` and a ring that
keeps SGR runs beside its lines). Two measures, each best of several runs,
before and after alternating:

- in process: the same bytes (plain ``seq`` output, and the same lines each
  coloured) fed in 4 KiB reads through cleaner and ring, MB/s;
- through the engine: ``seq 1 N`` (plain) and ``seq 1 N | sed`` colouring
  every line, in a terminal whose job core uses the old or the new pair, MB/s
  of output read (the reader thread, markers, screen and all).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path

from dsh_magics.terminal import Registry, Result
from dsh_magics.terminal.core import cleaner as new_cleaner
from dsh_magics.terminal.core import jobcore
from dsh_magics.terminal.core import ring as new_ring

BEFORE = "eb21d32"
ROOT = Path(__file__).resolve().parent.parent


def _old(module: str) -> types.ModuleType:
    path = f"dsh_magics/terminal/core/{module}.py"
    src = subprocess.run(["git", "show", f"{BEFORE}:{path}"], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    spec = importlib.util.spec_from_loader(f"_before_{module}", loader=None)
    assert spec is not None
    mod = importlib.util.module_from_spec(spec)
    exec(compile(src, f"{BEFORE}:{path}", "exec"), mod.__dict__)  # noqa: S102 - our own file at that commit
    return mod


def _use_pair(cleaner: Callable[..., object], ring: Callable[..., object]) -> None:
    """The cleaner and ring the next JobCore is built with: jobcore looks its
    module globals ``Cleaner`` and ``Ring`` up in ``JobCore.__init__``. By
    setattr, as mypy refuses assigning a function or another class to a
    class's name; the names in a tuple, as ruff's B010 refuses a constant."""
    for name, value in (("Cleaner", cleaner), ("Ring", ring)):
        setattr(jobcore, name, value)


def _streams(n: int) -> dict[str, bytes]:
    plain = "".join(f"{i}\r\n" for i in range(1, n + 1)).encode()
    coloured = "".join(f"\x1b[3{i % 7 + 1}m{i}\x1b[0m\r\n" for i in range(1, n + 1)).encode()
    return {"plain": plain, "coloured": coloured}


def _feed_rate(cleaner_cls: type, ring_cls: type, data: bytes, keep: bool) -> float:
    cleaner = cleaner_cls(keep_sgr=True) if keep else cleaner_cls()
    ring = ring_cls()
    t = time.perf_counter()
    for i in range(0, len(data), 4096):
        text = cleaner.feed(data[i : i + 4096])
        if text:
            ring.feed(text)
    return len(data) / 1e6 / (time.perf_counter() - t)


def in_process(quick: bool) -> dict[str, dict[str, float]]:
    old_c, old_r = _old("cleaner"), _old("ring")
    out: dict[str, dict[str, float]] = {}
    for name, data in _streams(100_000 if quick else 1_000_000).items():
        before, after = [], []
        for _ in range(3 if quick else 7):
            before.append(_feed_rate(old_c.Cleaner, old_r.Ring, data, keep=False))
            after.append(_feed_rate(new_cleaner.Cleaner, new_ring.Ring, data, keep=True))
        out[name] = {"before_MBps": max(before), "after_MBps": max(after), "after_over_before": max(after) / max(before)}
    return out


def through_engine(quick: bool) -> dict[str, dict[str, float]]:
    old_c, old_r = _old("cleaner"), _old("ring")
    n = 300_000 if quick else 2_000_000
    commands = {
        "plain": f"seq 1 {n}",
        "coloured": f"seq 1 {n} | sed 's/.*/\\x1b[31m&\\x1b[0m/'",
    }
    regs = {}
    try:
        def old_cleaner(**_: object) -> object:
            return old_c.Cleaner()

        class OldRing(old_r.Ring):  # type: ignore[name-defined,misc]
            def style_rows(self, *args: object, **kwargs: object) -> list[object]:
                return []  # what the job view asks of today's ring

        for label, pair in (("before", (old_cleaner, OldRing)), ("after", (new_cleaner.Cleaner, new_ring.Ring))):
            _use_pair(*pair)
            reg = Registry()
            reg.attach("bench")
            regs[label] = reg
        _use_pair(new_cleaner.Cleaner, new_ring.Ring)
        out: dict[str, dict[str, float]] = {}
        for name, cmd in commands.items():
            best = {"before": 0.0, "after": 0.0}
            size = sum(len(str(i)) + 1 for i in range(1, n + 1)) + (9 * n if name == "coloured" else 0)
            for _ in range(2 if quick else 3):
                for label, reg in regs.items():
                    t = time.perf_counter()
                    r = reg.exec("bench", cmd, wait_ms=600_000)
                    took = time.perf_counter() - t
                    assert isinstance(r, Result) and r.ok and r.output.endswith(f"{n}\n"), r
                    best[label] = max(best[label], size / 1e6 / took)
            out[name] = {
                "before_MBps": best["before"],
                "after_MBps": best["after"],
                "after_over_before": best["after"] / best["before"],
            }
        return out
    finally:
        _use_pair(new_cleaner.Cleaner, new_ring.Ring)
        for reg in regs.values():
            reg.close_all()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    res = {"in_process": in_process(args.quick), "engine": through_engine(args.quick)}
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    for where, rows in res.items():
        for name, row in rows.items():
            print(
                f"{where:10} {name:8} before {row['before_MBps']:7.1f} MB/s  after {row['after_MBps']:7.1f} MB/s"
                f"  after/before {row['after_over_before']:.2f}x"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
