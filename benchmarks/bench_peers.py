"""Peer benchmark: the engine side by side with what users would otherwise
pick, all measured in one run on one machine (ratios, not absolute targets).

    python benchmarks/bench_peers.py [--quick] [--json] [--out PATH]
    python benchmarks/bench_peers.py --markdown benchmarks/results.json

Writes ``benchmarks/results.json`` (or ``--out``) and prints a table.

Round trip of ``true`` (median, interleaved so load drifts hit every
contender alike):
- engine: ``Registry.exec("true", wait_ms=...)`` on a warm terminal;
- raw PTY floor: ``bench_engine.RawPty``, a bare ``bash --norc -i`` in
  ptyprocess, one typed line with an inline marker, read until the marker;
- ``subprocess.run(["bash", "-c", "true"])``;
- IPython ``%%bash`` through an in-process ``InteractiveShell``;
- ``pexpect.replwrap.bash()``.

Throughput of ``seq 1 N`` (best of a few runs, MB/s of seq's output):
engine, raw PTY and subprocess (a pipe, not a PTY) at the large N; the two
slow peers at a smaller N, which only flatters them (their cost per byte is
flat or grows with output size).

Also: attach (new terminal ready for a command) against ``bash -i`` spawned
in a PTY until it has run a first typed command, login and non-login; idle
CPU of 16 open terminals from ``/proc/<pid>/stat`` utime+stime; aggregate
throughput with 1 to 16 busy terminals against as many raw PTYs read by as
many threads.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import platform
import select
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_engine import JobLinePty, RawPty  # noqa: E402
from ptyprocess import PtyProcess  # noqa: E402

from dsh_magics.jobs import Job  # noqa: E402
from dsh_magics.terminal import Registry, Result  # noqa: E402

HERE = Path(__file__).resolve().parent
CLK_TCK = os.sysconf("SC_CLK_TCK")

TARGETS = {
    # name: (description, comparison, threshold)
    "roundtrip_vs_raw": ("round trip / raw PTY floor", "<=", 2.5),
    "subprocess_vs_engine": ("subprocess.run / round trip", ">=", 3.0),
    "replwrap_vs_engine": ("replwrap / round trip", ">=", 20.0),
    "throughput_vs_raw": ("throughput / raw PTY floor", ">=", 0.85),
    "attach_vs_bash_login": ("attach / bash -l -i first prompt", "<=", 1.5),
    "attach_vs_bash_nologin": ("attach (login=False) / bash --norc -i first prompt", "<=", 1.5),
}


# -- helpers --------------------------------------------------------------------
def seq_bytes(n: int) -> int:
    """Bytes ``seq 1 n`` prints (``\\n`` line ends), computed, not measured."""
    total, width, start = 0, 1, 1
    while start <= n:
        end = min(n, 10**width - 1)
        total += (end - start + 1) * (width + 1)
        start, width = end + 1, width + 1
    return total


def timed_ms(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def summary(samples: list[float]) -> dict[str, float]:
    qs = statistics.quantiles(samples, n=10) if len(samples) >= 10 else [min(samples), max(samples)]
    return {
        "median": statistics.median(samples),
        "p10": qs[0],
        "p90": qs[-1],
        "n": len(samples),
    }


def cpu_ticks(pid: int | str = "self") -> int:
    """utime + stime of a process, in clock ticks."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def ctxt_switches(pid: int | str = "self") -> int:
    """Context switches of every thread of a process: a polling loop shows up
    here even when it burns too little CPU to register in clock ticks."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{tid}/status") as f:
            for line in f:
                if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                    total += int(line.split()[1])
    return total


def loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine() -> dict[str, Any]:
    import IPython
    import pexpect
    import ptyprocess

    import dsh_magics

    model = "unknown"
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    bash = subprocess.run(["bash", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    return {
        "cores": os.cpu_count(),
        "cpu_model": model,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "bash": bash,
        "ptyprocess": ptyprocess.__version__,
        "pexpect": pexpect.__version__,
        "IPython": IPython.__version__,
        "dsh_magics": getattr(dsh_magics, "__version__", "dev"),
    }


class JobLineFloor:
    """The raw PTY floor, typing the engine's own job line instead of ``true``
    (``bench_engine.JobLinePty``: the setup sourced first, read until the end
    marker): loading the command file, the prompt's view, evaluating the
    command with stdin from /dev/null, both markers, the hidden end marker.
    What bash must do per job by design, without any Python around it; the
    gap between this and the engine is the engine's own cost."""

    def __init__(self) -> None:
        self.pty = JobLinePty()

    def run(self) -> None:
        self.pty.job()

    def close(self) -> None:
        self.pty.close()


class BashMagic:
    """IPython's ``%%bash`` run through an in-process shell, its printing
    captured into a buffer (as a notebook front end would receive it)."""

    def __init__(self) -> None:
        from IPython.core.interactiveshell import InteractiveShell

        self.ip = InteractiveShell.instance()
        self.sink = io.StringIO()

    def run(self, cell: str) -> str:
        self.sink.seek(0)
        self.sink.truncate()
        with contextlib.redirect_stdout(self.sink):
            self.ip.run_cell_magic("bash", "", cell)
        return self.sink.getvalue()


class Replwrap:
    def __init__(self) -> None:
        from pexpect import replwrap

        self.rw = replwrap.bash()

    def run(self, cmd: str) -> str:
        return self.rw.run_command(cmd, timeout=None)

    def close(self) -> None:
        self.rw.child.close(force=True)


def _engine_run(reg: Registry, session: str, cmd: str) -> Result:
    res = reg.exec(session, cmd, wait_ms=600_000)
    assert isinstance(res, Result) and res.exit_code == 0, res
    return res


# -- measurements ---------------------------------------------------------------
def measure_roundtrip(n: int) -> dict[str, Any]:
    reg = Registry()
    raw = RawPty()
    jl = JobLineFloor()
    magic = BashMagic()
    rw = Replwrap()
    try:
        reg.attach("rt")
        for _ in range(20):
            _engine_run(reg, "rt", "true")
            raw.run("true")
            jl.run()
        for _ in range(3):
            magic.run("true")
            rw.run("true")
            subprocess.run(["bash", "-c", "true"], check=True)
        kinds = ("engine", "raw_pty", "raw_pty_job_line", "subprocess_run", "ipython_bash_magic", "replwrap")
        samples: dict[str, list[float]] = {k: [] for k in kinds}
        for i in range(n):
            samples["engine"].append(timed_ms(lambda: _engine_run(reg, "rt", "true")))
            samples["raw_pty"].append(timed_ms(lambda: raw.run("true")))
            samples["raw_pty_job_line"].append(timed_ms(jl.run))
            if i % 10 == 0:
                samples["subprocess_run"].append(timed_ms(lambda: subprocess.run(["bash", "-c", "true"], check=True)))
                samples["ipython_bash_magic"].append(timed_ms(lambda: magic.run("true")))
            if i % 25 == 0:
                samples["replwrap"].append(timed_ms(lambda: rw.run("true")))
    finally:
        reg.close_all()
        raw.close()
        jl.close()
        rw.close()
    return {k: summary(v) for k, v in samples.items()}


def measure_throughput(n_big: int, n_small: int, reps: int) -> dict[str, Any]:
    reg = Registry()
    raw = RawPty()
    magic = BashMagic()
    rw = Replwrap()
    big, small = seq_bytes(n_big), seq_bytes(n_small)
    best: dict[str, float] = {}

    def keep(name: str, ms: float) -> None:
        best[name] = min(best.get(name, float("inf")), ms)

    def engine(n: int) -> None:
        res = _engine_run(reg, "tp", f"seq 1 {n}")
        assert res.output.endswith(f"\n{n}\n")

    def raw_seq(n: int) -> None:
        out = raw.run(f"seq 1 {n}")
        assert f"\r\n{n}\r\n".encode() in out[-64:]

    def sub(n: int) -> None:
        out = subprocess.run(["bash", "-c", f"seq 1 {n}"], capture_output=True, check=True).stdout
        assert len(out) == seq_bytes(n)

    def magic_seq(n: int) -> None:
        assert magic.run(f"seq 1 {n}").endswith(f"\n{n}\n")

    def rw_seq(n: int) -> None:
        assert f"\n{n}\r\n" in rw.run(f"seq 1 {n}")[-64:]

    try:
        reg.attach("tp")
        engine(1000)
        raw_seq(1000)
        for _ in range(reps):  # interleaved, best of reps
            keep("engine", timed_ms(lambda: engine(n_big)))
            keep("raw_pty", timed_ms(lambda: raw_seq(n_big)))
            keep("subprocess_run", timed_ms(lambda: sub(n_big)))
            keep("engine_small", timed_ms(lambda: engine(n_small)))
            keep("raw_pty_small", timed_ms(lambda: raw_seq(n_small)))
            keep("ipython_bash_magic", timed_ms(lambda: magic_seq(n_small)))
            keep("replwrap", timed_ms(lambda: rw_seq(n_small)))
    finally:
        reg.close_all()
        raw.close()
        rw.close()
    size = {"engine": big, "raw_pty": big, "subprocess_run": big}
    return {
        "n_big": n_big,
        "n_small": n_small,
        "best_ms": best,
        "MBps": {k: size.get(k, small) / 1e6 / (v / 1000) for k, v in best.items()},
    }


def _bash_ready_ms(argv: list[str]) -> float:
    """Spawn ``argv`` in a PTY and time until it has run a typed command:
    its start-up files, its first prompt, and reading input."""
    t = time.perf_counter()
    p = PtyProcess.spawn(argv, env=dict(os.environ), dimensions=(30, 120))
    try:
        p.write(b'echo __RE""ADY__\n')  # the echoed line does not match
        buf = b""
        deadline = time.monotonic() + 60
        while b"__READY__" not in buf:
            r, _, _ = select.select([p.fd], [], [], max(0.0, deadline - time.monotonic()))
            if not r:
                raise TimeoutError(f"{argv} never became ready")
            buf += os.read(p.fd, 65536)
        return (time.perf_counter() - t) * 1000
    finally:
        p.close(force=True)


def measure_attach(n: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for login in (True, False):
        reg = Registry(login=login)
        argv = ["bash", "-l", "-i"] if login else ["bash", "--noprofile", "--norc", "-i"]
        eng: list[float] = []
        bash: list[float] = []
        try:
            for i in range(n):  # interleaved

                def attach(i: int = i, reg: Registry = reg) -> object:
                    return reg.attach(f"attach-{i}")

                eng.append(timed_ms(attach))
                reg.close(f"attach-{i}")
                bash.append(_bash_ready_ms(argv))
        finally:
            reg.close_all()
        key = "login" if login else "nologin"
        out[key] = {"engine_attach": summary(eng), "bash_first_prompt": summary(bash), "argv": argv}
    return out


def measure_idle_and_scaling(idle_s: float, lines: int, ks: list[int]) -> dict[str, Any]:
    reg = Registry(login=False)
    raws: list[RawPty] = []
    me = os.getpid()
    try:
        c0, t0 = cpu_ticks(), time.monotonic()
        time.sleep(idle_s)  # the measurement itself: CPU used while nothing happens
        baseline = (cpu_ticks() - c0) / CLK_TCK / (time.monotonic() - t0)

        sessions = [f"idle-{k:02d}" for k in range(16)]
        for s in sessions:
            reg.attach(s)
            _engine_run(reg, s, "true")
        pids: list[int] = []
        for s in sessions:
            pid = reg.info(s).pid
            assert pid is not None, f"{s} has no shell"
            pids.append(pid)
        # Read the shells' counters outside the window, ours right at its
        # edges, so the reading itself barely counts.
        s0, y0 = sum(cpu_ticks(p) for p in pids), sum(ctxt_switches(p) for p in pids)
        x0, c0, t0 = ctxt_switches(), cpu_ticks(), time.monotonic()
        time.sleep(idle_s)
        c1, elapsed, x1 = cpu_ticks(), time.monotonic() - t0, ctxt_switches()
        s1, y1 = sum(cpu_ticks(p) for p in pids), sum(ctxt_switches(p) for p in pids)
        idle = {
            "seconds": round(elapsed, 2),
            "python_cpu_pct_baseline_no_terminals": 100 * baseline,
            "python_cpu_pct_16_terminals": 100 * (c1 - c0) / CLK_TCK / elapsed,
            "shells_cpu_pct_16_terminals": 100 * (s1 - s0) / CLK_TCK / elapsed,
            "python_threads": len(os.listdir(f"/proc/{me}/task")),
            # includes the main thread's own sleep (a couple of switches)
            "python_context_switches": x1 - x0,
            "shells_context_switches": y1 - y0,
            "tick_resolution_pct": 100 / CLK_TCK / elapsed,
        }

        raws = [RawPty() for _ in range(max(ks))]
        nbytes = seq_bytes(lines)
        scaling: dict[str, Any] = {"lines_per_terminal": lines, "k": {}}
        for k in ks:
            # engine: start k jobs, then wait for all of them
            t = time.perf_counter()
            started = [reg.exec(s, f"seq 1 {lines}") for s in sessions[:k]]
            for job in started:
                assert isinstance(job, Job), job  # no wait_ms: exec returns the job at once
                res = reg.wait(job.id, timeout=600)
                assert res.exit_code == 0 and res.output.endswith(f"\n{lines}\n"), res
            eng = time.perf_counter() - t
            # raw floor: k bare PTYs, each read by its own thread
            threads = [threading.Thread(target=r.run, args=(f"seq 1 {lines}",)) for r in raws[:k]]
            t = time.perf_counter()
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            raw = time.perf_counter() - t
            scaling["k"][str(k)] = {
                "engine_MBps": k * nbytes / 1e6 / eng,
                "raw_pty_MBps": k * nbytes / 1e6 / raw,
                "ratio": raw / eng,
            }
        return {"idle": idle, "scaling": scaling}
    finally:
        reg.close_all()
        for r in raws:
            r.close()


# -- report ---------------------------------------------------------------------
def evaluate(res: dict[str, Any]) -> dict[str, Any]:
    rt = res["roundtrip_ms"]
    tp = res["throughput"]["MBps"]
    at = res["attach_ms"]
    values = {
        "roundtrip_vs_raw": rt["engine"]["median"] / rt["raw_pty"]["median"],
        "subprocess_vs_engine": rt["subprocess_run"]["median"] / rt["engine"]["median"],
        "replwrap_vs_engine": rt["replwrap"]["median"] / rt["engine"]["median"],
        "throughput_vs_raw": tp["engine"] / tp["raw_pty"],
        "attach_vs_bash_login": at["login"]["engine_attach"]["median"] / at["login"]["bash_first_prompt"]["median"],
        "attach_vs_bash_nologin": at["nologin"]["engine_attach"]["median"]
        / at["nologin"]["bash_first_prompt"]["median"],
    }
    out = {}
    for name, (desc, op, threshold) in TARGETS.items():
        v = values[name]
        met = v <= threshold if op == "<=" else v >= threshold
        out[name] = {"description": desc, "value": round(v, 3), "target": f"{op} {threshold}", "met": met}
    return out


def print_report(res: dict[str, Any]) -> None:
    m = res["machine"]
    print(f"machine: {m['cores']} cores, {m['cpu_model']}, Linux {m['kernel']}; Python {m['python']}, "
          f"{m['bash']}; ptyprocess {m['ptyprocess']}, pexpect {m['pexpect']}, IPython {m['IPython']}")
    print(f"load average before {res['load_before']}, after {res['load_after']}")
    rt = res["roundtrip_ms"]
    print("\nround trip of `true` (ms: median [p10-p90], n)")
    for k, v in rt.items():
        print(f"  {k:20} {v['median']:9.3f}  [{v['p10']:.3f}-{v['p90']:.3f}]  n={v['n']}")
    tp = res["throughput"]
    print(f"\nthroughput of `seq 1 N` (MB/s, best of runs; N={tp['n_big']:,}, slow peers N={tp['n_small']:,})")
    for k, v in tp["MBps"].items():
        print(f"  {k:20} {v:9.2f}")
    print("\nattach / first prompt (ms, median)")
    for key, v in res["attach_ms"].items():
        print(f"  {key:8} engine {v['engine_attach']['median']:9.1f}   {' '.join(v['argv'])}: "
              f"{v['bash_first_prompt']['median']:9.1f}")
    idle = res["idle_and_scaling"]["idle"]
    print(f"\nidle CPU over {idle['seconds']} s (% of one core; tick = {idle['tick_resolution_pct']:.2f}%): "
          f"python {idle['python_cpu_pct_16_terminals']:.2f} with 16 terminals "
          f"({idle['python_cpu_pct_baseline_no_terminals']:.2f} without), 16 shells {idle['shells_cpu_pct_16_terminals']:.2f}; "
          f"context switches: python {idle['python_context_switches']}, shells {idle['shells_context_switches']}")
    sc = res["idle_and_scaling"]["scaling"]
    print(f"\nscaling, {sc['lines_per_terminal']:,} lines per busy terminal (aggregate MB/s)")
    for k, v in sc["k"].items():
        print(f"  {k:>3} terminals  engine {v['engine_MBps']:8.2f}  raw PTYs {v['raw_pty_MBps']:8.2f}  "
              f"ratio {v['ratio']:.2f}")
    sp = res["roundtrip_split"]
    print(f"\nround trip split: job line / raw floor {sp['job_line_over_raw']:.2f}x (bash's share by design), "
          f"engine / job line {sp['engine_over_job_line']:.2f}x (+{sp['engine_minus_job_line_ms']:.3f} ms in Python)")
    print("\ntargets")
    for v in res["targets"].values():
        print(f"  {'met   ' if v['met'] else 'MISSED'}  {v['description']:55} {v['value']:8.3f}  (target {v['target']})")


def markdown(res: dict[str, Any]) -> str:
    """The tables of benchmarks/README.md, from a results dict."""
    rt, tp, at = res["roundtrip_ms"], res["throughput"], res["attach_ms"]
    idle, sc = res["idle_and_scaling"]["idle"], res["idle_and_scaling"]["scaling"]
    eng = rt["engine"]["median"]
    names = {
        "engine": "dsh-magics engine",
        "raw_pty": "raw PTY floor",
        "raw_pty_job_line": "raw PTY typing the engine's job line",
        "subprocess_run": "`subprocess.run(['bash','-c',...])`",
        "ipython_bash_magic": "IPython `%%bash`",
        "replwrap": "`pexpect.replwrap.bash()`",
    }
    lines = [
        "| | round trip of `true`, median ms (p10-p90) | time vs engine | throughput, MB/s |",
        "|---|---|---|---|",
    ]
    big = {"engine": "engine", "raw_pty": "raw_pty", "subprocess_run": "subprocess_run"}
    for key, label in names.items():
        r = rt[key]
        mbps = tp["MBps"].get(big.get(key, key))
        n = tp["n_big"] if key in big else tp["n_small"]
        shown = f"{mbps:.1f} (N={n:,})" if mbps is not None else ""
        lines.append(
            f"| {label} | {r['median']:.3f} ({r['p10']:.3f}-{r['p90']:.3f}) | {r['median'] / eng:.2f}x | {shown} |"
        )
    lines.append(
        f"| engine / raw PTY at the small N | | | {tp['MBps']['engine_small']:.1f} / "
        f"{tp['MBps']['raw_pty_small']:.1f} (N={tp['n_small']:,}) |"
    )
    sp = res.get("roundtrip_split")
    if sp:
        lines += [
            "",
            f"Round trip split: the engine's job line typed into the raw PTY costs {sp['job_line_over_raw']:.2f}x "
            f"the bare floor (bash's share, by design); the engine takes {sp['engine_over_job_line']:.2f}x that "
            f"(+{sp['engine_minus_job_line_ms']:.3f} ms on the Python side).",
        ]
    lines += ["", "| attach (new terminal ready for a command) | engine, median ms | bash in a PTY to its first command, median ms | ratio |", "|---|---|---|---|"]
    for key, v in at.items():
        e, b = v["engine_attach"]["median"], v["bash_first_prompt"]["median"]
        lines.append(f"| {key} | {e:.1f} | {b:.1f} (`{' '.join(v['argv'])}`) | {e / b:.2f} |")
    lines += [
        "",
        f"Idle CPU over {idle['seconds']} s with 16 open terminals: this process "
        f"{idle['python_cpu_pct_16_terminals']:.2f}% of a core (without terminals "
        f"{idle['python_cpu_pct_baseline_no_terminals']:.2f}%), the 16 shells together "
        f"{idle['shells_cpu_pct_16_terminals']:.2f}% (one clock tick is {idle['tick_resolution_pct']:.2f}%); "
        f"context switches in that time: {idle['python_context_switches']} for all "
        f"{idle['python_threads']} threads of this process, {idle['shells_context_switches']} for the shells.",
        "",
        f"| busy terminals ({sc['lines_per_terminal']:,} lines each) | engine, aggregate MB/s | raw PTYs, aggregate MB/s | engine / raw |",
        "|---|---|---|---|",
    ]
    for k, v in sc["k"].items():
        lines.append(f"| {k} | {v['engine_MBps']:.1f} | {v['raw_pty_MBps']:.1f} | {v['ratio']:.2f} |")
    lines += ["", "| target | measured | target | |", "|---|---|---|---|"]
    for v in res["targets"].values():
        lines.append(f"| {v['description']} | {v['value']:.2f} | {v['target']} | {'met' if v['met'] else '**missed**'} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer samples and smaller outputs (a smoke run)")
    ap.add_argument("--json", action="store_true", help="print the results as JSON instead of a table")
    ap.add_argument("--out", default=str(HERE / "results.json"), help="where to write the results")
    ap.add_argument("--markdown", metavar="RESULTS", help="print README tables from a results file and exit")
    args = ap.parse_args(argv)
    if args.markdown:
        print(markdown(json.loads(Path(args.markdown).read_text())))
        return 0
    q = args.quick
    res: dict[str, Any] = {"machine": machine(), "quick": q, "load_before": loadavg()}
    started = time.time()
    res["roundtrip_ms"] = measure_roundtrip(100 if q else 1000)
    res["throughput"] = measure_throughput(300_000 if q else 3_000_000, 60_000 if q else 300_000, 1 if q else 3)
    res["attach_ms"] = measure_attach(2 if q else 6)
    res["idle_and_scaling"] = measure_idle_and_scaling(1.0 if q else 5.0, 50_000 if q else 400_000, [1, 2, 4, 8, 16])
    res["load_after"] = loadavg()
    res["seconds"] = round(time.time() - started, 1)
    res["targets"] = evaluate(res)
    rt = res["roundtrip_ms"]
    res["roundtrip_split"] = {
        # what bash must do per job by design, over the bare floor
        "job_line_over_raw": rt["raw_pty_job_line"]["median"] / rt["raw_pty"]["median"],
        # what the engine adds on top of that (Python side)
        "engine_over_job_line": rt["engine"]["median"] / rt["raw_pty_job_line"]["median"],
        "engine_minus_job_line_ms": rt["engine"]["median"] - rt["raw_pty_job_line"]["median"],
    }
    Path(args.out).write_text(json.dumps(res, indent=2) + "\n")
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        print_report(res)
        print(f"\n{res['seconds']} s; results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
