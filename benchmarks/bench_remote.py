"""Remote terminal benchmark: a persistent ``ssh://`` terminal against what
agents usually do, a fresh ``ssh host CMD`` per command, in one run.

    python benchmarks/bench_remote.py [--quick] [--json] [--target ssh://...]

By default it starts a private OpenSSH server on 127.0.0.1 with throwaway
keys (as the tests do), so nothing of ~/.ssh is used. With ``--target`` it
uses your own ssh setup (agent, config) for both contenders.

- Round trip of ``true``: ``RemoteTerminal.exec`` + wait on a warm terminal,
  against ``ssh ... true`` (connect, authenticate, run, disconnect), median,
  interleaved. A fresh ssh also pays for the remote user's ~/.bashrc, which
  bash reads when sshd runs it with -c.
- Throughput of ``seq 1 N``: the terminal (through the remote PTY and the
  in-band transport) against ``ssh ... seq 1 N`` read from a pipe, MB/s of
  seq's output, best of 3.
- The side channel (also alone with ``--side-channel-only``): the round
  trip with it on and off, probes while idle and during a job quiet every
  second, Ctrl-C to settled with it on and off, one probe, and start-up and
  ``close()`` of a terminal with it on and off.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dsh_magics import jobs  # noqa: E402
from dsh_magics.terminal.config import TerminalConfig  # noqa: E402
from dsh_magics.terminal.remote import RemoteTerminal, Target, parse_target  # noqa: E402
from dsh_magics.terminal.remote.side_channel import ENV_SIDE_CHANNEL  # noqa: E402
from dsh_magics.terminal.remote.targets import ENV_SSH_OPTIONS  # noqa: E402

IDLE_WATCH_S = 3.0


def _remote(target: str) -> Target:
    """``target`` parsed; a remote one (None would mean this machine)."""
    t = parse_target(target)
    assert t is not None, f"{target!r} is not a remote target"
    return t


def _ssh_argv(target: str, command: str) -> list[str]:
    t = _remote(target)
    assert t.kind == "ssh"
    argv = ["ssh", *shlex.split(os.environ.get(ENV_SSH_OPTIONS, "")), "-o", "BatchMode=yes"]
    if t.port:
        argv += ["-p", str(t.port)]
    if t.user:
        argv += ["-l", t.user]
    return [*argv, "--", t.host or "", command]


def _ms(fn) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1000


def measure(target: str, quick: bool = False) -> dict:
    n_fresh = 20 if quick else 60
    per_fresh = 10  # terminal round trips per fresh-ssh sample, interleaved
    seq_n = 300_000 if quick else 2_000_000
    term = RemoteTerminal("bench", TerminalConfig(login=False, max_lines=1000), _remote(target), job_table=jobs.JobTable())
    try:

        def rt() -> None:
            job = term.exec("true")
            assert job.wait(30) and job.result.exit_code == 0

        def fresh() -> None:
            subprocess.run(_ssh_argv(target, "true"), check=True, stdin=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        for _ in range(20):
            rt()
        fresh()
        terminal_ms: list[float] = []
        fresh_ms: list[float] = []
        for _ in range(n_fresh):
            fresh_ms.append(_ms(fresh))
            terminal_ms.extend(_ms(rt) for _ in range(per_fresh))

        seq_bytes = len("".join(f"{i}\n" for i in range(1, seq_n + 1)))

        def seq_terminal() -> None:
            job = term.exec(f"seq 1 {seq_n}")
            assert job.wait(300) and job.result.exit_code == 0

        def seq_fresh() -> None:
            out = subprocess.run(_ssh_argv(target, f"seq 1 {seq_n}"), check=True, stdin=subprocess.DEVNULL, capture_output=True).stdout
            assert len(out) == seq_bytes

        seq_t, seq_f = [], []
        for _ in range(3):
            seq_t.append(_ms(seq_terminal))
            seq_f.append(_ms(seq_fresh))
    finally:
        term.close()
    rt_t, rt_f = statistics.median(terminal_ms), statistics.median(fresh_ms)
    mbps_t = seq_bytes / 1e6 / (min(seq_t) / 1000)
    mbps_f = seq_bytes / 1e6 / (min(seq_f) / 1000)
    return {
        "round_trip_ms": {
            "terminal": round(rt_t, 3),
            "fresh_ssh": round(rt_f, 3),
            "speedup": round(rt_f / rt_t, 1),
        },
        "throughput_mb_s": {
            "terminal": round(mbps_t, 1),
            "fresh_ssh_pipe": round(mbps_f, 1),
            "ratio": round(mbps_t / mbps_f, 2),
            "seq_n": seq_n,
            "mb": round(seq_bytes / 1e6, 1),
        },
        "samples": {"terminal": len(terminal_ms), "fresh_ssh": len(fresh_ms)},
        "load_avg": os.getloadavg(),
    }


def _open(target: str, mode: str, name: str) -> RemoteTerminal:
    """A terminal with the side channel on or off (``DSH_MAGICS_SIDE_CHANNEL``)."""
    old = os.environ.get(ENV_SIDE_CHANNEL)
    os.environ[ENV_SIDE_CHANNEL] = "1" if mode == "on" else "0"
    try:
        return RemoteTerminal(
            name, TerminalConfig(login=False, max_lines=1000), _remote(target), job_table=jobs.JobTable()
        )
    finally:
        if old is None:
            os.environ.pop(ENV_SIDE_CHANNEL, None)
        else:
            os.environ[ENV_SIDE_CHANNEL] = old


def measure_start(target: str, quick: bool = False) -> dict:
    """Start-up of an ``ssh://`` terminal, from the call to a shell ready
    for its first job, with the side channel on (over ssh: the engine's own
    connection, then the terminal's session over it) and off (the
    terminal's ssh alone), interleaved; and ``close``."""
    n = 6 if quick else 15
    start: dict[str, list[float]] = {"on": [], "off": []}
    close: dict[str, list[float]] = {"on": [], "off": []}
    for i in range(n):
        for mode in ("on", "off") if i % 2 == 0 else ("off", "on"):
            t = time.perf_counter()
            term = _open(target, mode, f"bench-start-{mode}-{i}")
            start[mode].append((time.perf_counter() - t) * 1000)
            close[mode].append(_ms(term.close))
    return {
        "start_ms": {m: round(statistics.median(v), 1) for m, v in start.items()},
        "start_ratio": round(statistics.median(start["on"]) / statistics.median(start["off"]), 3),
        "close_ms": {m: round(statistics.median(v), 1) for m, v in close.items()},
        "samples": n,
    }


def measure_side_channel(target: str, quick: bool = False) -> dict:
    """The side channel's cost: the round trip of `true` with it on and off
    (interleaved; idle costs nothing, so the ratio should be ~1, and no
    probe is made during them or while idle: counted), an interrupt with it
    on and off (a launch check and a prompt check), and the probes a 10 s
    job makes whose output goes quiet every second (at most one per quiet
    spell: 10)."""
    n = 100 if quick else 400
    n_int = 10 if quick else 30
    terms = {mode: _open(target, mode, f"bench-side-{mode}") for mode in ("on", "off")}
    try:
        def rt(term: RemoteTerminal) -> None:
            job = term.exec("true")
            assert job.wait(30) and job.result.exit_code == 0

        for term in terms.values():
            for _ in range(20):
                rt(term)
        on = terms["on"]
        idle_before = on.watch.probes
        on_ms, off_ms = [], []
        for _ in range(n):
            on_ms.append(_ms(lambda: rt(terms["on"])))
            off_ms.append(_ms(lambda: rt(terms["off"])))
        # idle: no job, so no deadline and no probe (watched for a while, not waited on)
        threading.Event().wait(IDLE_WATCH_S)
        idle_probes = on.watch.probes - idle_before

        def interrupt_ms(term: RemoteTerminal, quiet: bool = False) -> tuple[float, int]:
            """Ctrl-C to settled, once the command has started (it prints
            first; with ``quiet``, once the quiet check has looked too); and
            the probes that took."""
            job = term.exec("sh -c 'echo s; exec sleep 30'")
            deadline = time.monotonic() + 30
            while "s\n" not in term.snapshot(job).output:
                assert time.monotonic() < deadline, "the job did not start"
                term.wait_output(term.output_seq, 1.0)
            probes = term.watch.probes
            while quiet and (term.watch.probes == probes or term.watch._busy):
                assert time.monotonic() < deadline, "no quiet check"
                term.wait_output(term.output_seq, 0.01)
            probes = term.watch.probes
            t = time.perf_counter()
            term.interrupt()
            assert job.wait(30) and job.result.status == "interrupted", term.snapshot(job)
            return (time.perf_counter() - t) * 1000, term.watch.probes - probes

        int_on, int_off, int_probes, int_quiet, int_quiet_probes = [], [], [], [], []
        for _ in range(n_int):
            ms, k = interrupt_ms(terms["on"])
            int_on.append(ms)
            int_probes.append(k)
            int_off.append(interrupt_ms(terms["off"])[0])
            ms, k = interrupt_ms(terms["on"], quiet=True)
            int_quiet.append(ms)
            int_quiet_probes.append(k)
        before = on.watch.probes
        job = on.exec("for i in 1 2 3 4 5 6 7 8 9 10; do echo $i; sleep 1; done")
        assert job.wait(60) and job.result.exit_code == 0
        spells = 10
        probes = on.watch.probes - before
        pid, tty = on.stream.where
        assert on.side is not None and pid is not None
        side = on.side
        # The shell names no terminal at start-up: the side channel finds it
        # at its first use (ec7e2b1), as a probe does.
        tty = tty or side.locate(pid)
        assert tty is not None
        probe_ms = statistics.median(_ms(lambda: side.probe(tty, pid)) for _ in range(20))
    finally:
        for term in terms.values():
            term.close()
    m_on, m_off = statistics.median(on_ms), statistics.median(off_ms)
    i_on, i_off = statistics.median(int_on), statistics.median(int_off)
    return {
        "round_trip_ms": {"side_channel_on": round(m_on, 3), "side_channel_off": round(m_off, 3),
                          "ratio": round(m_on / m_off, 3)},
        "idle": {"round_trips": 2 * n, "idle_seconds": IDLE_WATCH_S, "probes": idle_probes},
        "interrupt_ms": {"side_channel_on": round(i_on, 1), "side_channel_off": round(i_off, 1),
                         "ratio": round(i_on / i_off, 2), "probes_per_interrupt": statistics.median(int_probes),
                         "after_quiet_check": round(statistics.median(int_quiet), 1),
                         "probes_after_quiet_check": statistics.median(int_quiet_probes),
                         "samples": n_int},
        "quiet_job": {"seconds": 10, "quiet_spells": spells, "probes": probes},
        "probe_ms": round(probe_ms, 1),
        "samples": n,
        "load_avg": os.getloadavg(),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--target", help="an ssh:// target of your own (default: a private sshd on 127.0.0.1)")
    ap.add_argument("--side-channel-only", action="store_true", help="only the side channel's cost (and start-up)")
    args = ap.parse_args()
    server = None
    if args.target:
        target = args.target
    else:
        from tests.remote.conftest import start_sshd

        server = start_sshd(Path(tempfile.mkdtemp(prefix="dsh-bench-sshd-")))
        os.environ[ENV_SSH_OPTIONS] = server.client_config("bench")
        target = server.target
    try:
        res = {} if args.side_channel_only else measure(target, quick=args.quick)
        res["side_channel"] = measure_side_channel(target, quick=args.quick)
        res["start"] = measure_start(target, quick=args.quick)
    finally:
        if server is not None:
            server.stop()
            shutil.rmtree(server.dir, ignore_errors=True)  # its keys and configs
    res["target"] = "private sshd on 127.0.0.1" if server else target
    if args.json:
        print(json.dumps(res, indent=2))
        return
    if "round_trip_ms" in res:
        r, t = res["round_trip_ms"], res["throughput_mb_s"]
        print(f"target: {res['target']}  (load avg {res['load_avg'][0]:.2f})")
        print(f"round trip of `true`: terminal {r['terminal']:.3f} ms, fresh `ssh host true` {r['fresh_ssh']:.1f} ms -> {r['speedup']}x faster")
        print(
            f"throughput of seq 1 {t['seq_n']} ({t['mb']} MB): terminal {t['terminal']} MB/s, "
            f"`ssh host seq` to a pipe {t['fresh_ssh_pipe']} MB/s -> ratio {t['ratio']}"
        )
    sc = res["side_channel"]
    r = sc["round_trip_ms"]
    print(
        f"round trip of `true`, side channel on {r['side_channel_on']:.3f} ms, off {r['side_channel_off']:.3f} ms "
        f"-> ratio {r['ratio']}"
    )
    i = sc["idle"]
    print(f"idle: {i['probes']} probes during {i['round_trips']} round trips and {i['idle_seconds']:g} s with no job")
    it = sc["interrupt_ms"]
    print(
        f"Ctrl-C to settled (a started `sleep`): side channel on {it['side_channel_on']} ms "
        f"({it['probes_per_interrupt']:g} probes: launch check, prompt check), off {it['side_channel_off']} ms "
        f"-> ratio {it['ratio']}; on, once the quiet check has looked: {it['after_quiet_check']} ms "
        f"({it['probes_after_quiet_check']:g} probes)"
    )
    q = sc["quiet_job"]
    print(f"a {q['seconds']} s job quiet every second ({q['quiet_spells']} quiet spells): {q['probes']} probes")
    print(f"one probe (a round trip to the side channel's sh): {sc['probe_ms']} ms  (load avg {sc['load_avg'][0]:.2f})")
    st = res["start"]
    print(
        f"start-up to a ready shell: side channel on {st['start_ms']['on']} ms, off {st['start_ms']['off']} ms "
        f"-> ratio {st['start_ratio']} (median of {st['samples']}); close: on {st['close_ms']['on']} ms, "
        f"off {st['close_ms']['off']} ms"
    )


if __name__ == "__main__":
    main()
