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
- live view refresh: bytes on the wire (request + reply line) and time of
  one refresh of a live display (a result snapshot, 4 a second) of a
  running job that has printed several thousand lines: the whole retained
  output (``result(job_id)``, before) against what the view draws
  (``result(job_id, tail_lines=20)``, after).

``--view`` runs only the last measure.

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
from dsh_magics.host import protocol as P
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


def _wire_bytes(client: HostClient, args: dict[str, Any]) -> int:
    """Bytes of one ``result`` request and its reply, as the host encodes them."""
    value = client._call("result", args)
    return len(P.request(1, "result", args)) + len(P.ok_reply(1, value))


def view_refresh(client: HostClient, lines: int = 5000, tail: int = 20, n: int = 40) -> dict[str, Any]:
    """A live view's refresh of a running job that printed ``lines`` lines:
    whole snapshot vs ``tail_lines=tail``, bytes and median ms."""
    # Lines of about 80 characters, like a build log; the ring keeps the last 4000.
    text = "the quick brown fox jumps over the lazy dog; " * 2
    job = client.exec("bench-view", f"seq -w 1 {lines} | sed 's/$/ {text.strip()}/'; echo printed; sleep 600")
    assert not isinstance(job, Result)
    try:
        deadline = time.monotonic() + 60
        while not client.result(job.id, tail_lines=1).output.endswith("printed\n"):
            if time.monotonic() > deadline:
                raise RuntimeError("the job did not print its lines within 60 s")
            client.wait_output("bench-view", client.output_seq("bench-view"), timeout=1)
        full = _wire_bytes(client, {"job_id": job.id})
        part = _wire_bytes(client, {"job_id": job.id, "tail_lines": tail})
        ms: dict[str, list[float]] = {"full": [], "tail": []}
        for _ in range(n):
            ms["full"] += _samples_ms(lambda: client.result(job.id), 1)
            ms["tail"] += _samples_ms(lambda: client.result(job.id, tail_lines=tail), 1)
        return {
            "lines": lines,
            "tail_lines": tail,
            "bytes_per_refresh": {"full": full, "tail": part},
            "bytes_ratio": full / part,
            "bytes_per_second_at_4Hz": {"full": 4 * full, "tail": 4 * part},
            "ms_per_refresh": {k: statistics.median(v) for k, v in ms.items()},
        }
    finally:
        client.interrupt("bench-view")
        client.wait(job.id, timeout=30)


def measure_view() -> dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="dsh-bench-", dir="/tmp")
    os.chmod(tmp, 0o700)
    client = HostClient(HostPaths.for_name("bench", tmp))
    try:
        client.connect()
        return {"view": view_refresh(client)}
    finally:
        try:
            stop_host(client.paths)
        finally:
            client.detach()
            shutil.rmtree(tmp, ignore_errors=True)


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
        out["view"] = view_refresh(client)
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
    ap.add_argument("--view", action="store_true", help="only the live view refresh measure")
    args = ap.parse_args(argv)
    res = measure_view() if args.view else measure(args.quick)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    if args.view:
        _print_view(res["view"])
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
    _print_view(res["view"])
    return 0


def _print_view(v: dict[str, Any]) -> None:
    b, ms = v["bytes_per_refresh"], v["ms_per_refresh"]
    print(
        f"live view refresh of a running job with {v['lines']} lines, through the host: "
        f"whole snapshot {b['full']:,} B, last {v['tail_lines']} lines {b['tail']:,} B "
        f"= {v['bytes_ratio']:.0f}x fewer bytes ({4 * b['full'] / 1e3:.0f} kB/s -> {4 * b['tail'] / 1e3:.1f} kB/s at 4 Hz)"
    )
    print(f"  ms per refresh (median): whole {ms['full']:.3f}  tail {ms['tail']:.3f}")


if __name__ == "__main__":
    sys.exit(main())
