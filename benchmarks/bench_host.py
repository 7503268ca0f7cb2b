"""Host benchmark: the engine API through the terminal host against the
in-process engine, measured in the same run (ratios, not absolute times).

    python benchmarks/bench_host.py [--quick] [--json]

- round trip: ``exec("true", wait_ms=...)`` on a warm terminal, median;
  target: host <= 3x in-process.
- completion throughput: ``seq 1 N`` until its result arrives.
- live throughput: ``seq 1 N`` started without waiting, while a consumer
  follows the output as it arrives (an ``output`` event, then
  ``read(since=cursor)``) until it has seen the job settle; MB/s of output
  produced while followed. Target: host >= 0.8x in-process. Also shown:
  the share of lines the consumer read before the 4000-line ring dropped
  them (the job's result always reports drops explicitly).

The host runs in a private runtime directory and is stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from typing import Any

from dsh_magics.host import HostClient, HostPaths, stop_host
from dsh_magics.terminal import Registry, Result


def _samples_ms(fn: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def _true(reg: Any) -> None:
    r = reg.exec("bench", "true", wait_ms=10_000)
    assert isinstance(r, Result) and r.exit_code == 0


def _completion(reg: Any, seq_n: int) -> float:
    t = time.perf_counter()
    r = reg.exec("bench", f"seq 1 {seq_n}", wait_ms=600_000)
    elapsed = time.perf_counter() - t
    assert isinstance(r, Result) and r.output.endswith(f"{seq_n}\n"), r
    return elapsed


def _live(reg: Any, seq_n: int) -> tuple[float, float]:
    """Seconds until a live consumer saw the job settle, and the share of
    lines it read before the ring dropped them."""
    wake = threading.Event()
    unsubscribe = reg.subscribe(lambda ev: wake.set() if ev.get("session_id") == "bench" else None)
    try:
        cursor = reg.read("bench", last=0).next_line
        start_line = cursor
        seen = 0
        t = time.perf_counter()
        job = reg.exec("bench", f"seq 1 {seq_n}")
        while True:
            wake.wait(0.5)
            wake.clear()
            done = job.done
            r = reg.read("bench", since=cursor)
            seen += len(r.lines)
            cursor = r.next_line
            if done:
                break
        elapsed = time.perf_counter() - t
        assert job.result.exit_code == 0
        return elapsed, seen / max(1, cursor - start_line)
    finally:
        unsubscribe()


def measure(quick: bool = False) -> dict[str, Any]:
    """Every figure alternates in-process and host runs, so a change in
    machine load during the run hits both sides alike."""
    rounds = 3 if quick else 5
    n = 200 if quick else 1000
    seq_n = 300_000 if quick else 2_000_000
    nbytes = sum(len(f"{i}\n") for i in range(1, seq_n + 1))
    out: dict[str, Any] = {"seq_lines": seq_n, "rounds": rounds}
    tmp = tempfile.mkdtemp(prefix="dsh-bench-", dir="/tmp")
    os.chmod(tmp, 0o700)
    local = Registry()
    client = HostClient(HostPaths.for_name("bench", tmp))
    both = (("in_process", local), ("host", client))
    try:
        local.attach("bench")
        client.connect()
        client.attach("bench")
        for _, reg in both:
            for _ in range(30):
                _true(reg)
        rt: dict[str, list[float]] = {"in_process": [], "host": []}
        rt_l: dict[str, list[float]] = {"in_process": [], "host": []}
        comp: dict[str, list[float]] = {"in_process": [], "host": []}
        live: dict[str, list[tuple[float, float]]] = {"in_process": [], "host": []}
        for _ in range(rounds):
            for name, reg in both:
                rt[name] += _samples_ms(lambda reg=reg: _true(reg), n // rounds)
            for name, reg in both:
                # As under the magics, whose live views keep a listener subscribed.
                unsubscribe = reg.subscribe(lambda ev: None)
                try:
                    rt_l[name] += _samples_ms(lambda reg=reg: _true(reg), n // rounds)
                finally:
                    unsubscribe()
            for name, reg in both:
                comp[name].append(_completion(reg, seq_n))
            for name, reg in both:
                live[name].append(_live(reg, seq_n))
        med = {k: statistics.median(v) for k, v in rt.items()}
        out["roundtrip_ms"] = med
        out["roundtrip_ratio"] = med["host"] / med["in_process"]
        med_l = {k: statistics.median(v) for k, v in rt_l.items()}
        out["roundtrip_listening_ms"] = med_l
        out["roundtrip_listening_ratio"] = med_l["host"] / med_l["in_process"]
        best = {k: min(v) for k, v in comp.items()}
        out["completion_MBps"] = {k: nbytes / 1e6 / v for k, v in best.items()}
        out["completion_ratio"] = best["in_process"] / best["host"]
        best_live = {k: min(x[0] for x in v) for k, v in live.items()}
        out["live_MBps"] = {k: nbytes / 1e6 / v for k, v in best_live.items()}
        out["live_seen_share"] = {k: statistics.median(x[1] for x in v) for k, v in live.items()}
        out["live_ratio"] = best_live["in_process"] / best_live["host"]
        share = out["live_seen_share"]
        out["live_lines_seen_ratio"] = (share["host"] * out["live_MBps"]["host"]) / (
            share["in_process"] * out["live_MBps"]["in_process"]
        )
    finally:
        local.close_all()
        try:
            stop_host(client.paths)
        finally:
            client.detach()
            shutil.rmtree(tmp, ignore_errors=True)
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
    rt, c, lv, share = res["roundtrip_ms"], res["completion_MBps"], res["live_MBps"], res["live_seen_share"]
    print(f"round trip of true (median ms): in-process {rt['in_process']:.3f}  host {rt['host']:.3f}")
    print(f"  host / in-process = {res['roundtrip_ratio']:.2f}x (target <= 3x)")
    rl = res["roundtrip_listening_ms"]
    print(
        f"  with an event listener subscribed (as under the magics): in-process {rl['in_process']:.3f}  "
        f"host {rl['host']:.3f}  = {res['roundtrip_listening_ratio']:.2f}x (target <= 3x)"
    )
    print(f"completion, seq 1 {res['seq_lines']} (MB/s): in-process {c['in_process']:.1f}  host {c['host']:.1f}")
    print(f"  host / in-process = {res['completion_ratio']:.2f}x")
    print(
        f"live output followed by a consumer (MB/s): in-process {lv['in_process']:.1f}  host {lv['host']:.1f}"
        f"  (lines seen before the ring dropped them: {share['in_process']:.0%} / {share['host']:.0%})"
    )
    print(f"  host / in-process = {res['live_ratio']:.2f}x (target >= 0.8x)")
    print(
        f"  lines the consumer actually read per second, host / in-process = "
        f"{res['live_lines_seen_ratio']:.2f}x (a reader in another process does not slow the "
        "shell down, so at this rate it falls behind the ring sooner)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
