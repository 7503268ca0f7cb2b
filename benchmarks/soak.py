"""Soak: random operations on several terminals at once for a given time,
each result checked against what bash would print, and the process's
resources compared at the start and the end (the host's too, with ``--host``).

    python benchmarks/soak.py --seconds 1800 [--sessions 4] [--cmd] [--ssh] [--host] [--seed N] [--json]
    python benchmarks/soak.py --iterations 40            # the suite's smoke run

Operations, picked at random for a random session: a quick command (exact
output), a failing one (exact status), a burst of lines (exact), invalid
UTF-8 and a NUL byte (exact, as cleaned), a screen program's alternate screen,
state kept between jobs, a wait that times out on a running job and then a
Ctrl-C, a Ctrl-C of a running ``sleep``, a tty job's prompt answered by
typing, a password prompt left with Ctrl-C, and closing the terminal (the
next command then gets a fresh shell). With ``--cmd`` one of the sessions is
a ``cmd:`` remote terminal (the in-band transport on a local bash); with
``--ssh`` one is an ssh terminal on a private sshd on 127.0.0.1 (started
for the run, as the remote tests do: throwaway keys, nothing of ~/.ssh
read). With ``--host`` every session lives in a terminal host (a private
runtime directory, stopped at the end) and the operations go through its
client, as a notebook kernel's do.

Invariants, checked after every operation: the result is the modelled one;
the operation ended within its deadline plus ``SLACK_S``. At the end, after
closing everything: no process of ours is left (descendants of this process,
the terminal watchdog aside), and descriptors and threads are back to where
they were once the first terminal had started; RSS is reported at the start
and the end (the baseline is taken after one command and one prompt on
each terminal, which open what a terminal opens once). The run exits
non-zero on any violation.

Not covered (see benchmarks/README.md, "soak"): several threads driving the
sessions at once.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout: tests/

from dsh_magics.jobs import Job  # noqa: E402
from dsh_magics.terminal import Engine, Registry, Result  # noqa: E402
from dsh_magics.terminal.core.boot import booted  # noqa: E402
from tests.processes import pids_with_env  # noqa: E402

if TYPE_CHECKING:
    from dsh_magics.host import HostClient

#: Allowance on top of each operation's own deadline (a loaded 2-core machine).
SLACK_S = 10.0
#: Every operation's own deadline: a healthy one takes milliseconds.
DEADLINE_S = 20.0
CMD_TARGET = "cmd:--probe=sh bash --noprofile --norc -i"


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def our_processes() -> list[int]:
    """Live descendants of this process, but the terminal watchdog (one per
    process, for its whole life: docs/engine.md, "No orphans")."""
    from dsh_magics.terminal.core import procs

    out = []
    for pid in procs.descendants(os.getpid()):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read()
        except OSError:
            continue
        if b"dsh_magics.terminal.core.watchdog" not in argv and procs.alive(pid):
            out.append(pid)
    return out


def proc_resources(pid: int) -> dict[str, int]:
    """RSS, descriptors and threads of another process (the host), from /proc."""
    with open(f"/proc/{pid}/statm") as f:
        rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return {"rss": rss, "fds": len(os.listdir(f"/proc/{pid}/fd")), "threads": len(os.listdir(f"/proc/{pid}/task"))}


def tagged_processes(prefix: str) -> list[int]:
    """Live processes whose DSH_MAGICS_SESSION starts with ``prefix`` (a
    host's terminals are not our descendants): the suite's own finder."""
    return pids_with_env("DSH_MAGICS_SESSION", prefix, prefix=True)


def _parent(pid: int) -> int:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return int(f.read().rsplit(b")", 1)[1].split()[1])


def _describe(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmdline = f.read()
    except OSError:
        return f"{pid} (gone)"
    run = booted(cmdline)  # a helper of ours: its module and arguments, not the boot's stub
    argv = b" ".join(run) if run is not None else cmdline.replace(b"\0", b" ")
    return f"{pid} {argv.decode(errors='replace').strip()[:120]}"


class Violation(AssertionError):
    """A result that differs from the model, or an operation past its deadline."""


@dataclass
class Soak:
    reg: Engine
    sessions: list[str]
    targets: dict[str, str | None]
    rng: random.Random
    counts: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    state: dict[str, int] = field(default_factory=dict)  # the model: SOAK_N per session
    slowest: float = 0.0

    # -- helpers ------------------------------------------------------------------
    def attach(self, s: str) -> None:
        self.reg.attach(s, target=self.targets[s])

    def done(self, s: str, command: str, tty: bool = False) -> Result:
        res = self.reg.exec(s, command, wait_ms=int(DEADLINE_S * 1000), tty=tty)
        if not isinstance(res, Result):
            raise Violation(f"{s}: {command[:60]!r} did not settle within {DEADLINE_S}s")
        return res

    def start(self, s: str, command: str, tty: bool = False) -> Job:
        job = self.reg.exec(s, command, tty=tty)
        assert isinstance(job, Job), job  # no wait_ms: exec returns the job at once
        return job

    def expect(self, what: str, got: object, want: object) -> None:
        if got != want:
            raise Violation(f"{what}: got {got!r}, want {want!r}")

    def until(self, s: str, cond: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + DEADLINE_S
        seq = self.reg.output_seq(s)  # (-1 is refused through the host: after_seq >= 0)
        while not cond():
            left = deadline - time.monotonic()
            if left <= 0:
                raise Violation(f"{s}: {what} not seen within {DEADLINE_S}s")
            seq = self.reg.wait_output(s, seq, min(left, 0.5))

    # -- operations ---------------------------------------------------------------
    def quick(self, s: str, i: int) -> None:
        res = self.done(s, f"echo q{i}")
        self.expect("quick", (res.status, res.exit_code, res.output), ("completed", 0, f"q{i}\n"))

    def fail(self, s: str, i: int) -> None:
        code = i % 254 + 1
        res = self.done(s, f"echo f{i} >&2; (exit {code})")
        self.expect("fail", (res.status, res.exit_code, res.output), ("completed", code, f"f{i}\n"))

    def burst(self, s: str, i: int) -> None:
        n = self.rng.randint(1000, 3000)
        res = self.done(s, f"seq {i} {i + n - 1}")
        self.expect("burst", (res.status, res.exit_code), ("completed", 0))
        self.expect("burst output", res.output, "".join(f"{v}\n" for v in range(i, i + n)))

    def bytes_(self, s: str, i: int) -> None:
        res = self.done(s, f"printf 'a\\377b\\000c{i}\\n'")
        self.expect("invalid utf-8", (res.status, res.output), ("completed", f"a\ufffdbc{i}\n"))

    def screen(self, s: str, i: int) -> None:
        res = self.done(s, f"printf '\\033[?1049h'; echo in-alt; printf '\\033[?1049l'; echo out{i}", tty=True)
        self.expect("screen", (res.status, res.exit_code), ("completed", 0))
        if not res.output.endswith(f"out{i}\n"):
            raise Violation(f"screen: output {res.output[-80:]!r}")

    def state_(self, s: str, i: int) -> None:
        n = self.state.get(s, 0) + 1
        res = self.done(s, "SOAK_N=$((SOAK_N + 1)); echo $SOAK_N")
        self.expect("state", res.output, f"{n}\n")
        self.state[s] = n

    def wait_then_interrupt(self, s: str, i: int) -> None:
        job = self.start(s, f"echo w{i}; sleep 60")
        res = self.reg.wait(job.id, timeout=0.2)
        self.expect("wait timed out", (res.status, res.timed_out), ("running", True))
        self.interrupt(s, job.id, f"w{i}\n")

    def interrupt_sleep(self, s: str, i: int) -> None:
        job = self.start(s, f"sh -c 'echo s{i}; exec sleep 60'")
        self.interrupt(s, job.id, f"s{i}\n")

    def interrupt(self, s: str, job_id: str, shown: str) -> None:
        self.until(s, lambda: shown in self.reg.result(job_id).output, repr(shown))
        self.reg.interrupt(s)
        res = self.reg.wait(job_id, timeout=DEADLINE_S)
        self.expect("interrupt", (res.status, res.exit_code), ("interrupted", 130))
        if res.output not in (shown, shown + "\n"):
            raise Violation(f"interrupt: output {res.output!r}")

    def answer(self, s: str, i: int) -> None:
        job = self.start(s, f"read -p 'name{i}? ' x; echo hi-$x", tty=True)
        self.until(s, lambda: self.reg.info(s).awaiting_input is not None, "the prompt")
        self.reg.send(s, text=f"n{i}", wait_ms=0)
        res = self.reg.wait(job.id, timeout=DEADLINE_S)
        self.expect("answer", (res.status, res.output), ("completed", f"name{i}? n{i}\nhi-n{i}\n"))

    def password(self, s: str, i: int) -> None:
        job = self.start(s, "read -s -p 'Password: ' pw; echo never", tty=True)
        self.until(s, lambda: (self.reg.info(s).awaiting_input or {}).get("secret") is True, "a secret prompt")
        self.reg.interrupt(s)
        res = self.reg.wait(job.id, timeout=DEADLINE_S)
        self.expect("password", (res.status, res.exit_code), ("interrupted", 130))

    def reopen(self, s: str, i: int) -> None:
        self.reg.close(s)
        self.attach(s)
        self.state[s] = 0
        res = self.done(s, "echo ${SOAK_N:-unset}")
        self.expect("reopen", res.output, "unset\n")

    OPS: ClassVar[dict[str, int]] = {
        "quick": 8, "fail": 3, "burst": 2, "bytes_": 1, "screen": 1, "state_": 2,
        "wait_then_interrupt": 1, "interrupt_sleep": 2, "answer": 1, "password": 1, "reopen": 1,
    }  # fmt: skip

    def step(self, i: int) -> None:
        name = self.rng.choices(list(self.OPS), weights=list(self.OPS.values()))[0]
        s = self.rng.choice(self.sessions)
        start = time.monotonic()
        try:
            getattr(self, name)(s, i)
        except Violation as e:
            self.violations.append(f"op {i} {name} on {s}: {e}")
            if self.reg.info(s).job_id:  # leave the session usable for the next one
                self.reg.interrupt(s)
                self.reg.close(s)
                self.attach(s)
                self.state[s] = 0
        took = time.monotonic() - start
        self.slowest = max(self.slowest, took)
        # The heaviest operation has two waits of DEADLINE_S.
        if took > 2 * DEADLINE_S + SLACK_S:
            self.violations.append(f"op {i} {name} on {s}: took {took:.1f}s")
        self.counts[name.rstrip("_")] += 1


class Setting:
    """Where the run's terminals live and the targets they use: an sshd and
    a host started for the run, stopped at its end."""

    def __init__(self, host: bool, ssh: bool) -> None:
        self.sshd = None
        self.host_paths = None
        self.client: HostClient | None = None
        self.ssh_target: str | None = None
        if ssh:
            import tempfile
            from pathlib import Path

            from tests.remote.conftest import start_sshd

            self.sshd = start_sshd(Path(tempfile.mkdtemp(prefix="dsh-soak-sshd-")))
            os.environ["DSH_MAGICS_SSH_OPTIONS"] = self.sshd.client_config("soak")
            self.ssh_target = self.sshd.target
        if host:
            import tempfile

            from dsh_magics.host import HostPaths

            self.host_paths = HostPaths.for_name("soak", tempfile.mkdtemp(prefix="dshsoak-", dir="/tmp"))

    def engine(self) -> Engine:
        if self.host_paths is None:
            return Registry(login=False)
        from dsh_magics.host import HostClient

        os.environ["DSH_MAGICS_LOGIN"] = "0"  # the host's shells, like the in-process ones
        client = self.client = HostClient(self.host_paths)
        client.connect()
        return client

    def host_pid(self, reg: Engine) -> int | None:
        return int(reg.host_info()["pid"]) if self.host_paths is not None else None  # type: ignore[attr-defined]

    def stop(self) -> None:
        """Stop the host and the sshd (once; again does nothing)."""
        import shutil

        if self.host_paths is not None:
            from dsh_magics.host import stop_host

            if self.client is not None:
                self.client.detach()
            stop_host(self.host_paths)
            shutil.rmtree(self.host_paths.dir, ignore_errors=True)
            self.host_paths = None
        if self.sshd is not None:
            self.sshd.stop()
            shutil.rmtree(self.sshd.dir, ignore_errors=True)
            self.sshd = None


def run(
    seconds: float | None, iterations: int | None, sessions: int, cmd: bool, seed: int,
    host: bool = False, ssh: bool = False,
) -> dict[str, object]:  # fmt: skip
    setting = Setting(host, ssh)
    try:
        return _run(setting, seconds, iterations, sessions, cmd, seed, host)
    finally:
        setting.stop()  # (a run that failed half-way leaves no sshd or host either)


def _run(
    setting: Setting, seconds: float | None, iterations: int | None, sessions: int, cmd: bool, seed: int, host: bool
) -> dict[str, object]:
    rng = random.Random(seed)
    prefix = f"soak{os.getpid()}-"
    names = [f"{prefix}{k}" for k in range(sessions)]
    targets: dict[str, str | None] = {n: None for n in names}
    remote = ([CMD_TARGET] if cmd else []) + ([setting.ssh_target] if setting.ssh_target else [])
    for name, target in zip(reversed(names), remote, strict=False):
        targets[name] = target
    processes_before = our_processes()
    reg = setting.engine()
    host_pid = setting.host_pid(reg)
    soak = Soak(reg, names, targets, rng)
    host_start: dict[str, int] = {}
    host_end: dict[str, int] = {}
    try:
        for n in names:
            soak.attach(n)
            # A terminal opens a descriptor at its first job, a remote one two
            # more at its first prompt (the side channel): the baseline has them.
            soak.quick(n, 0)
            soak.answer(n, 0)
        gc.collect()
        start = {"rss": rss_bytes(), "fds": fd_count(), "threads": threading.active_count()}
        names_start = sorted(t.name for t in threading.enumerate())
        if host_pid is not None:
            host_start = proc_resources(host_pid)
        t0 = time.monotonic()
        i = 0
        samples: list[tuple[int, float]] = []  # (operations, RSS in MB), ten over the run
        every = (seconds / 10) if seconds else None
        next_sample = t0 + every if every else None
        while (iterations is None or i < iterations) and (seconds is None or time.monotonic() - t0 < seconds):
            soak.step(i)
            i += 1
            if next_sample is not None and time.monotonic() >= next_sample:
                rss = proc_resources(host_pid)["rss"] if host_pid is not None else rss_bytes()
                samples.append((i, round(rss / 2**20, 1)))
                next_sample += every or 0.0
        elapsed = time.monotonic() - t0
        gc.collect()
        # A remote terminal's prompt probe runs in a short-lived thread that may
        # still be finishing the last job's look: a leak is what stays.
        settle = time.monotonic() + DEADLINE_S
        while time.monotonic() < settle and (
            threading.active_count() > start["threads"]
            or (host_pid is not None and proc_resources(host_pid)["threads"] > host_start["threads"])
        ):
            time.sleep(0.05)  # polling a condition with a deadline: those threads' end
        end_open = {"rss": rss_bytes(), "fds": fd_count(), "threads": threading.active_count()}
        names_end = sorted(t.name for t in threading.enumerate())
        if host_pid is not None:
            host_end = proc_resources(host_pid)
    finally:
        reg.close_all()
    # After the close: nothing left of any terminal; descriptors and threads
    # back to where they were with the terminals open (each open terminal
    # holds the same number) and none of their processes.
    # The host and its reaper (our children too) stay until it is stopped.
    host_procs = set() if host_pid is None else {host_pid, _parent(host_pid)}

    def leftovers() -> list[int]:
        ours = set(our_processes()) - set(processes_before) - host_procs
        return sorted(ours | set(tagged_processes(prefix)))

    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline and leftovers():
        time.sleep(0.05)  # polling a condition with a deadline: the processes' exit
    left = leftovers()
    if left:
        soak.violations.append(f"processes left after close_all: {[_describe(p) for p in left]}")
    for who, before, after in (("", start, end_open), ("host ", host_start, host_end)):
        for key in ("fds", "threads"):
            # (Fewer is fine: a terminal reopened meanwhile may not have needed
            # its side channel yet.)
            if key in before and after[key] > before[key]:
                extra = f" (threads new: {sorted(set(names_end) - set(names_start))})" if key == "threads" and not who else ""
                soak.violations.append(
                    f"{who}{key}: {before[key]} with the terminals open at the start, {after[key]} at the end{extra}"
                )
    setting.stop()
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline and (set(our_processes()) - set(processes_before)):
        time.sleep(0.05)  # the same: the host's and the sshd's exit
    after_stop = sorted(set(our_processes()) - set(processes_before))
    if after_stop:
        soak.violations.append(f"processes left after the host/sshd stopped: {[_describe(p) for p in after_stop]}")
    return {
        "seed": seed,
        "sessions": sessions,
        "targets": sorted({t.split(":", 1)[0] for t in targets.values() if t}),
        "through_host": host,
        "operations": i,
        "seconds": round(elapsed, 1),
        "by_kind": dict(sorted(soak.counts.items())),
        "violations": soak.violations,
        "slowest_operation_s": round(soak.slowest, 2),
        "start": start,
        "end": end_open,
        "rss_ratio": round(end_open["rss"] / start["rss"], 3),
        "host_start": host_start,
        "host_end": host_end,
        "rss_mb_by_operations": samples,
        "processes_left": left,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=None, help="run this long (default 60 unless --iterations)")
    p.add_argument("--iterations", type=int, default=None, help="run this many operations")
    p.add_argument("--sessions", type=int, default=3)
    p.add_argument("--cmd", action="store_true", help="one session is a cmd: remote terminal")
    p.add_argument("--ssh", action="store_true", help="one session is an ssh terminal (a private sshd)")
    p.add_argument("--host", action="store_true", help="the sessions live in a terminal host")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--json", action="store_true")
    a = p.parse_args(argv)
    seconds = a.seconds if a.seconds is not None or a.iterations is not None else 60.0
    seed = a.seed if a.seed is not None else random.randrange(2**32)
    out = run(seconds, a.iterations, a.sessions, a.cmd, seed, host=a.host, ssh=a.ssh)
    if a.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k}: {v}")
    return 1 if out["violations"] else 0


if __name__ == "__main__":
    sys.exit(main())
