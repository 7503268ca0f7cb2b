"""Engine benchmark: round trip and throughput against floors measured in the
same run (ratios, not absolute targets, because machines differ).

    python benchmarks/bench_engine.py [--quick] [--json]
    python benchmarks/bench_engine.py --lines [--quick]   # job line A/B only

Floors:
- raw PTY: a bare ``bash --norc --noprofile -i`` in ptyprocess; write one line
  with an inline marker, read until the marker (no files, no pipe, no thread).
- subprocess: ``subprocess.run(['bash', '-c', 'true'])``.

Round trips are sampled interleaved (engine, raw floor, engine, ...), so load
that comes and goes hits both alike; the ratio is of the two medians.

``--lines`` compares job lines without any Python around them: the raw PTY
floor, the same bare bash typing the job line of commit 8124abd (before
issue 13: no prompt view, no hidden end marker; frozen below) after that
commit's setup, and typing today's ``shell.job_line`` after today's setup,
interleaved; it also reports each shell's CPU per job (``/proc/<pid>/schedstat``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from ptyprocess import PtyProcess

from dsh_magics.terminal import Registry, Result
from dsh_magics.terminal.core import markers
from dsh_magics.terminal.local import shell


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


def _scratch() -> str:
    base = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    return tempfile.mkdtemp(prefix="bench-jobline-", dir=base)


class JobLinePty(RawPty):
    """A bare bash that has sourced the engine's setup and runs the engine's
    job line for ``true``, read until its end marker (the setup sends the
    shell's own stdout to a file, so only markers and the job reach the PTY)."""

    def __init__(self) -> None:
        super().__init__()
        self.dir = _scratch()
        setup = os.path.join(self.dir, "setup.sh")
        with open(setup, "w") as f:
            f.write(shell.setup_script(self.dir, self.dir))
        ready = markers.new_nonce()
        self.p.write(shell.setup_line(setup, ready).encode())
        self._until(f"S;{ready}".encode())
        self.script = os.path.join(self.dir, "command.sh")
        with open(self.script, "wb") as f:
            f.write(shell.command_file(b"true", keep=shell.can_keep("true")))

    def _until(self, needle: bytes) -> None:
        buf = bytearray()
        while needle not in buf:
            buf += os.read(self.p.fd, 65536)

    def line(self, end: str) -> str:
        return shell.job_line(markers.new_nonce(), self.script, end_nonce=end, status=0)

    def job(self) -> None:
        end = markers.new_nonce()
        self.p.write(self.line(end).encode())
        self._until(f"E;{end}".encode())

    def cpu_us(self) -> float:
        with open(f"/proc/{self.p.pid}/schedstat") as f:
            return int(f.read().split()[0]) / 1000

    def close(self) -> None:
        super().close()
        shutil.rmtree(self.dir, ignore_errors=True)


# The job line and setup of commit 8124abd (before issue 13), frozen: the
# baseline the cost budget is measured against.
_OLD_RESET = (
    "\\builtin unset PROMPT_COMMAND;PROMPT_COMMAND='\\builtin test $? = 0 || "
    "\\builtin printf \"\\033]6973;P\\007\" >&212; \\builtin test -t 0 || \\builtin exec 0<&210';"
    "PS1='' PS2='' PS0='';\\builtin set +o emacs +o vi"
)
_OLD_SETUP = "\n".join(
    [
        "set +o emacs +o vi 2>/dev/null",
        "set +o history +u +e +x +v +T +o pipefail 2>/dev/null",
        "unset HISTFILE PROMPT_COMMAND PS0",
        "PS1='' PS2='' PS4='+ '",
        "exec 212>&1 210<&0 211</dev/null",
        "set -o ignoreeof",
        "stty -echo 2>/dev/null",
        "exec 1>/dev/null 2>&1",
        "",
    ]
)
_OLD_LINE = (
    "\\builtin unset -v __dsh_magics_cmd; \\builtin . {script} || :; "
    "\\builtin printf '\\033]6973;B;{begin}\\007' >&212; "
    "! \\builtin eval \"${{__dsh_magics_cmd-\\builtin echo 'dsh-magics: the command file could not be read' >&2; "
    "(exit 126)}}\" <&211 >&212 2>&212; "
    "\\builtin printf '\\033]6973;E;{end};%d\\007' \"${{PIPESTATUS[0]}}\" >&212; "
    "\\builtin unset -v __dsh_magics_cmd; {reset}\n"
)


class OldJobLinePty(JobLinePty):
    """``JobLinePty`` with the job line and setup of commit 8124abd."""

    def __init__(self) -> None:
        RawPty.__init__(self)
        self.dir = _scratch()
        setup = os.path.join(self.dir, "setup.sh")
        with open(setup, "w") as f:
            f.write(_OLD_SETUP)
        ready = markers.new_nonce()
        self.p.write(
            f"\\builtin . {setup}; \\builtin trap - DEBUG ERR RETURN; {_OLD_RESET}\n:\n"
            f"{shell.sync_line(ready)}".encode()
        )
        self._until(f"S;{ready}".encode())
        self.script = os.path.join(self.dir, "command.sh")
        with open(self.script, "wb") as f:
            f.write(b"__dsh_magics_cmd='true'; \\builtin export -n __dsh_magics_cmd\n")

    def line(self, end: str) -> str:
        return _OLD_LINE.format(script=self.script, begin=markers.new_nonce(), end=end, reset=_OLD_RESET)


def measure_lines(quick: bool = False) -> dict:
    """Old job line against today's, and both against the raw floor, interleaved."""
    n = 500 if quick else 3000
    raw, old, new = RawPty(), OldJobLinePty(), JobLinePty()
    try:
        for _ in range(50):
            raw.run("true")
            old.job()
            new.job()
        samples: dict[str, list[float]] = {"raw_pty": [], "old_line": [], "new_line": []}
        cpu0 = (old.cpu_us(), new.cpu_us())
        for _ in range(n):
            samples["raw_pty"].append(_median_ms(lambda: raw.run("true"), 1))
            samples["old_line"].append(_median_ms(old.job, 1))
            samples["new_line"].append(_median_ms(new.job, 1))
        cpu1 = (old.cpu_us(), new.cpu_us())
    finally:
        raw.close()
        old.close()
        new.close()
    med = {k: statistics.median(v) for k, v in samples.items()}
    return {
        "roundtrip_ms": med,
        "new_over_old": med["new_line"] / med["old_line"],
        "ratio_vs_raw": {"old_line": med["old_line"] / med["raw_pty"], "new_line": med["new_line"] / med["raw_pty"]},
        "bash_cpu_us_per_job": {"old_line": (cpu1[0] - cpu0[0]) / n, "new_line": (cpu1[1] - cpu0[1]) / n},
        "samples": n,
    }


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
            assert isinstance(r, Result), r  # a Job: not settled within wait_ms
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
    ap.add_argument("--lines", action="store_true", help="only the job line A/B (old line vs today's)")
    args = ap.parse_args(argv)
    if args.lines:
        res = measure_lines(args.quick)
        if args.json:
            print(json.dumps(res, indent=2))
            return 0
        rt, cpu = res["roundtrip_ms"], res["bash_cpu_us_per_job"]
        print(f"job line round trip (median ms of {res['samples']}): raw PTY {rt['raw_pty']:.3f}  "
              f"old line {rt['old_line']:.3f}  new line {rt['new_line']:.3f}")
        print(f"  new / old = {res['new_over_old']:.2f}x; vs raw floor: old {res['ratio_vs_raw']['old_line']:.2f}x, "
              f"new {res['ratio_vs_raw']['new_line']:.2f}x")
        print(f"  bash CPU per job: old {cpu['old_line']:.0f} us, new {cpu['new_line']:.0f} us")
        return 0
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
