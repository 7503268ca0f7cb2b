"""Our SGR reader (``terminal/core/sgr.py``) against libghostty-vt's own SGR
parser, in the same run: why ours stays (its module docstring).

    python benchmarks/bench_sgr.py [--quick] [--json]

Both read the same sequences into the same pen (the libghostty side is
``tests/terminal/ghostty_sgr.py``, which the agreement test uses too), one
``apply`` per sequence as the ring calls it when a result's colours are worked
out. Per form of sequence: microseconds per ``apply``, best of several rounds,
the two alternating, and libghostty's time over ours. The first use of
libghostty's parser in a process (cffi parsing its C types) is timed apart.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dsh_magics.terminal.core import sgr  # noqa: E402
from tests.terminal import ghostty_sgr  # noqa: E402

FORMS = {
    "reset (0)": "0",
    "ls colours (01;34)": "01;34",
    "256 colours (38;5;208)": "38;5;208",
    "true colour (38;2;r;g;b)": "38;2;10;20;30",
    "colon true colour (38:2::r:g:b)": "38:2::10:20:30",
    "five at once (1;4;7;32;44)": "1;4;7;32;44",
}


def _per_call_us(fn: Callable[[Any, str], Any], params: str, n: int) -> float:
    t = time.perf_counter()
    for _ in range(n):
        fn(None, params)
    return (time.perf_counter() - t) / n * 1e6


def measure(quick: bool = False) -> dict[str, Any]:
    rounds, n = (3, 2_000) if quick else (7, 20_000)
    t = time.perf_counter()
    ghostty_sgr.apply(None, "0")
    out: dict[str, Any] = {"ghostty_first_use_ms": (time.perf_counter() - t) * 1e3, "rounds": rounds, "calls": n}
    for name, params in FORMS.items():
        assert sgr.apply(None, params) == ghostty_sgr.apply(None, params), params
        ours, theirs = [], []
        for _ in range(rounds):
            ours.append(_per_call_us(sgr.apply, params, n))
            theirs.append(_per_call_us(ghostty_sgr.apply, params, n))
        out[name] = {"ours_us": min(ours), "ghostty_us": min(theirs), "ghostty_over_ours": min(theirs) / min(ours)}
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    res = measure(args.quick)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(f"libghostty's SGR parser, first use in a process: {res['ghostty_first_use_ms']:.1f} ms")
    for name in FORMS:
        r = res[name]
        print(f"  {name:34} ours {r['ours_us']:6.2f} us  libghostty {r['ghostty_us']:6.2f} us  {r['ghostty_over_ours']:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
