"""Sessions opened and closed one after another (issue 32: 1,000 of them):
does a session cost the same at the end as at the start?

    python benchmarks/bench_sessions.py [--sessions 1000] [--json]

Each session: a new terminal, one ``echo`` whose output is checked, close.
Reported as ratios measured in the same run: the median of the last hundred
sessions against the first hundred (1.0: no slowdown as sessions come and
go), and a session's median against the floor of starting a bash at all
(``subprocess.run`` of ``bash --noprofile --norc -c true``), plus where a
close spends its time. The leak checks of the same loop are a test:
tests/reliability/test_thousand_sessions.py.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

from dsh_magics.terminal import Registry


def floor_s(runs: int = 30) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(["bash", "--noprofile", "--norc", "-c", "true"], check=True)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sessions", type=int, default=1000)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    reg = Registry(login=False)
    reg.exec("warm", "true", wait_ms=20_000)
    reg.close("warm")
    floor_before = floor_s()
    opened, ran, closed = [], [], []
    for i in range(a.sessions):
        s = f"bench-{i}"
        t0 = time.perf_counter()
        reg.attach(s)
        t1 = time.perf_counter()
        res = reg.exec(s, f"echo s{i}", wait_ms=20_000)
        t2 = time.perf_counter()
        reg.close(s)
        t3 = time.perf_counter()
        assert getattr(res, "output", None) == f"s{i}\n", res
        opened.append(t1 - t0)
        ran.append(t2 - t1)
        closed.append(t3 - t2)
    floor_after = floor_s()
    total = [o + r + c for o, r, c in zip(opened, ran, closed, strict=True)]
    k = min(100, len(total) // 2)
    floor = statistics.median([floor_before, floor_after])
    out = {
        "sessions": a.sessions,
        "last_vs_first_hundred": round(statistics.median(total[-k:]) / statistics.median(total[:k]), 2),
        "session_vs_bash_floor": round(statistics.median(total) / floor, 1),
        "open_share": round(sum(opened) / sum(total), 2),
        "exec_share": round(sum(ran) / sum(total), 2),
        "close_share": round(sum(closed) / sum(total), 2),
        "floor_drift": round(floor_after / floor_before, 2),
    }
    print(json.dumps(out) if a.json else "\n".join(f"{k}: {v}" for k, v in out.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
