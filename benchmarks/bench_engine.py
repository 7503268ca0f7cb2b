"""Engine benchmark: round trip and throughput against floors measured in the
same run (ratios, not absolute targets, because machines differ).

    python benchmarks/bench_engine.py [--quick] [--json]

Floors:
- raw PTY: a bare ``bash --norc --noprofile -i`` in ptyprocess; write one line
  with an inline marker, read until the marker (no files, no pipe, no thread).
- subprocess: ``subprocess.run(['bash', '-c', 'true'])``.

Round trips are sampled interleaved (engine, raw floor, engine, ...), so load
that comes and goes hits both alike; the ratio is of the two medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

from ptyprocess import PtyProcess

from dsh_magics.terminal import Registry


class RawPty:
    def __init__(self) -> None:
        env = dict(os.environ, PS1="", PROMPT_COMMAND="", TERM="dumb")
        self.p = PtyProcess.spawn(["bash", "--norc", "--noprofile", "-i"], env=env, echo=False)
        self.n = 0
        self.run("set +o emacs +o vi; stty -echo")

    def run(self, cmd: str) -> bytes:
        self.n += 1
        marker = f"__RAW{self.n}__".encode()
        self.p.write(f"{cmd}; printf '__RAW%s__' {self.n}\n".encode())
        buf = bytearray()
        fd = self.p.fd
        while True:
            buf += os.read(fd, 65536)
            if marker in buf[-len(marker) - 65536 :]:
                return bytes(buf)

    def close(self) -> None:
        self.p.close(force=True)


def _median_ms(fn, n: int) -> float:
    samples = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - t) * 1000)
    return statistics.median(samples)


def measure(quick: bool = False) -> dict:
    n = 200 if quick else 1000
    seq_n = 500_000 if quick else 3_000_000
    reg = Registry()
    raw = RawPty()
    try:
        reg.attach("bench")
        for _ in range(20):
            reg.exec("bench", "true", wait_ms=10_000)
            raw.run("true")
        eng_s: list[float] = []
        raw_s: list[float] = []
        for _ in range(n):
            eng_s.append(_median_ms(lambda: reg.exec("bench", "true", wait_ms=10_000), 1))
            raw_s.append(_median_ms(lambda: raw.run("true"), 1))
        engine_rt = statistics.median(eng_s)
        raw_rt = statistics.median(raw_s)
        sub_rt = _median_ms(lambda: subprocess.run(["bash", "-c", "true"], check=True), max(50, n // 10))

        def eng_seq() -> None:
            r = reg.exec("bench", f"seq 1 {seq_n}", wait_ms=600_000)
            assert r.output.endswith(f"{seq_n}\n"), r.output[-50:]

        def raw_seq() -> None:
            out = raw.run(f"seq 1 {seq_n}")
            assert f"{seq_n}".encode() in out[-200:]

        reps = 3
        eng_tp = min(_median_ms(eng_seq, 1) for _ in range(reps))
        raw_tp = min(_median_ms(raw_seq, 1) for _ in range(reps))
        nbytes = len("".join(f"{i}\n" for i in range(1, seq_n + 1)))
    finally:
        reg.close_all()
        raw.close()
    return {
        "roundtrip_ms": {"engine": engine_rt, "raw_pty": raw_rt, "subprocess_run": sub_rt},
        "roundtrip_ratio_vs_raw": engine_rt / raw_rt,
        "speedup_vs_subprocess": sub_rt / engine_rt,
        "throughput_MBps": {
            "engine": nbytes / 1e6 / (eng_tp / 1000),
            "raw_pty": nbytes / 1e6 / (raw_tp / 1000),
        },
        "throughput_ratio_vs_raw": raw_tp / eng_tp,
        "seq_lines": seq_n,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    res = measure(args.quick)
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    rt = res["roundtrip_ms"]
    tp = res["throughput_MBps"]
    print(f"round trip (median ms): engine {rt['engine']:.3f}  raw PTY {rt['raw_pty']:.3f}  "
          f"subprocess.run {rt['subprocess_run']:.3f}")
    print(f"  engine / raw floor = {res['roundtrip_ratio_vs_raw']:.2f}x (target <= 2.5x)")
    print(f"  subprocess / engine = {res['speedup_vs_subprocess']:.2f}x (target > 1x)")
    print(f"throughput seq 1 {res['seq_lines']} (MB/s): engine {tp['engine']:.1f}  raw PTY {tp['raw_pty']:.1f}")
    print(f"  engine / raw floor = {res['throughput_ratio_vs_raw']:.2f}x (target >= 0.85x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
