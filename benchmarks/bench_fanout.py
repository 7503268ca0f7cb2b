"""Fan-out benchmark: one command on 16 ssh targets through a group of
persistent terminals (dsh_magics.fanout), against pdsh, ClusterShell's clush
and parallel-ssh on the same 16 targets, in one run.

    python benchmarks/bench_fanout.py [--quick] [--json PATH] [--max-targets 64]
    python benchmarks/bench_fanout.py --first-only [--first-rounds 9]
    python benchmarks/bench_fanout.py --first-only --ab BEFORE_TREE [--first-rounds 9]
    python benchmarks/bench_fanout.py --first-only --cpu [--first-rounds 9]
    python benchmarks/bench_fanout.py --first-only --floor [--ab BEFORE_TREE] [--login]
    ... [--rehash-timeout 0] [--login] [--home skel]

A private OpenSSH server on 127.0.0.1 with throwaway keys (as the tests) is
reached under N host aliases (an ssh config with one Host entry each), so
every contender makes N real ssh connections to N "hosts". Measured:

- ``hostname; uname -r`` repeated R times (20; 5 with --quick) through each
  contender, wall time per command: the group's first command (connections
  included; 7 times on new terminals, interleaved with pdsh, and as many
  with the side channel off) and the repeated ones on the open terminals; ``pdsh -R ssh -w``
  with its default connection handling and with an ssh ControlMaster
  (``ControlPersist``, so only its first command connects); ``clush -b``;
  parallel-ssh's ``ParallelSSHClient`` (``pip install .[bench]``), whose
  client keeps its connections between ``run_command`` calls, so its first
  call and its repeated calls are shown apart, as ours are.
- The cost per extra target: the same command through groups of 1, 2, 4,
  ... up to --max-targets terminals (first and repeated), and pdsh on as many.

``--first-only`` measures the first command alone (``--first-rounds``
rounds, each: new terminals, pdsh, new terminals with the side channel off,
the two groups taking turns at going first), for the first-command target. With ``--ab DIR`` each round runs
the group's first command in a new Python process of this tree and of
another one (``git archive REV | tar -x -C DIR``: its ``dsh_magics``), the
two taking turns at going first, and pdsh between them: a before/after
under the same load. The time is taken inside the process, from the
group's start to its report (imports and Python's start are not in it).
All 16 "hosts" share one home here, so every session's ``~/.bashrc``
(``pyenv init``) contends for one pyenv rehash lock: pyenv retries every
0.1 s while ``SECONDS <= start + PYENV_REHASH_TIMEOUT`` (whole seconds; 1
here, as in the tests: up to 2 s) and then gives up. The slowest member's
time is then mostly that wait, which a fleet of separate hosts does not
have. ``--rehash-timeout 0`` waits only to the clock's next whole second,
``-1`` not at all (no session rehashes); either is the same for every
contender, and the wall time follows the work more closely.
``--floor`` adds a fourth contender to each round, after pdsh: 16 plain
``ssh -tt`` logins with no engine, the command typed ahead, timed until all
16 printed its output: the user's interactive login start, which every tool
that keeps such a shell pays before its first command and pdsh's ``bash -c``
does not (``PROMPT_COMMAND`` before the first prompt, the profile).
``--cpu`` counts CPU instead of wall time, in turn with pdsh: this process
to the report, the local processes it reaps (ssh clients), and the sshd
side (what the benchmark's sshd reaped: every session's processes).
The groups run with ``login=False`` (``bash --noprofile --norc -i``), as
pdsh's command reads no profile; ``--login`` runs them with the default,
``login=True``: no remote command, so sshd starts the login shell, which
reads ``/etc/profile`` and the profile (and through it, here, ``~/.bashrc``
once; until session 37 the remote ``bash -l -i`` read it a second time:
benchmarks/README.md, "Session 36" and "Session 37").

``--home skel`` (root only) runs every contender as a throwaway user,
``dsh-bench-fan-<pid>``, whose home is a copy of ``/etc/skel`` (Debian's
stock ``.bashrc`` and ``.profile``): what a user with an ordinary
``~/.bashrc`` sees, without this machine's (``pyenv init`` and
pyenv-virtualenv's prompt hook). The benchmark creates it (``useradd``)
and removes it with its home (``userdel -r``) when it ends, also on Ctrl-C
or SIGTERM; pdsh logs in as it (``-l``), and so do both trees' groups (the
ssh config's ``User``).

All times are medians on this machine, with the load average printed before
and after (the machine may be shared).
"""

from __future__ import annotations

import argparse
import json
import os
import pty
import pwd
import resource
import select
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dsh_magics import fanout  # noqa: E402
from dsh_magics.terminal import Registry, TerminalConfig  # noqa: E402
from dsh_magics.terminal.remote.side_channel import ENV_SIDE_CHANNEL  # noqa: E402
from dsh_magics.terminal.remote.targets import ENV_SSH_OPTIONS  # noqa: E402
from tests.procinfo import ppid  # noqa: E402
from tests.sshd import Sshd  # noqa: E402

COMMAND = "hostname; uname -r"
TARGETS = 16
#: The groups' ``TerminalConfig.login`` (``--login``: True).
LOGIN = os.environ.get("DSH_BENCH_LOGIN") == "1"
#: First commands (new terminals each time), interleaved with pdsh's.
FIRST_REPS = 7
#: The remote user every contender logs in as (``--home skel``: a throwaway one); None: this one.
REMOTE_USER: str | None = None


def _load() -> str:
    return open("/proc/loadavg").read().split(" ", 3)[:3].__str__()


def _run(argv: list[str], env: dict[str, str] | None = None, cwd: str | None = None) -> str:
    done = subprocess.run(
        argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env, cwd=cwd, timeout=300
    )
    if done.returncode != 0:
        raise RuntimeError(f"{argv[0]} failed ({done.returncode}): {done.stderr[-500:]}")
    return done.stdout


def _timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


class Ours:
    """Groups of persistent ssh terminals: the first command connects."""

    def __init__(self, n: int) -> None:
        self.reg = Registry(TerminalConfig(login=LOGIN, max_sessions=max(16, n), max_lines=1000))
        self.targets = [f"ssh://bh{i:02d}" for i in range(1, n + 1)]

    def once(self) -> None:
        group = fanout.start(self.reg, self.targets, COMMAND, book=fanout.GroupBook({}, []))
        assert group.wait(timeout_ms=600_000), "group did not finish"
        rep = fanout.report(group)
        assert rep.counts() == {"completed": len(self.targets)}, rep.table()

    def close(self) -> None:
        self.reg.close_all()


#: What the floor's logins type: the benchmark's command, a marker whose echo
#: differs from its output (the echo shows ``$((6*7))``), and ``exit``.
FLOOR_LINE = f"{COMMAND}; echo R$((6*7))X; exit\n"


def floor_once(cfg: str) -> float:
    """The interactive-login floor (``--floor``): N plain ``ssh -tt`` logins,
    no engine, each in a PTY of its own with the benchmark's command typed
    ahead; the seconds from the first client's start until every one has
    printed the marker (their logout and exit come after, out of the time,
    as a group's close is out of ours). sshd starts the user's login shell,
    which reads the profile and ``~/.bashrc`` and runs ``PROMPT_COMMAND``
    before its first prompt, as for a ``login=True`` terminal: what any tool
    that keeps a person's interactive login pays before its first command,
    and pdsh's ``bash -c`` does not. Until session 40's review the time ran
    to the clients' exit, the remote logout included."""
    clients: list[tuple[subprocess.Popen[bytes], int]] = []
    ended = False
    try:
        started = time.perf_counter()
        for i in range(1, TARGETS + 1):
            master, slave = pty.openpty()
            try:
                proc = subprocess.Popen(
                    ["ssh", "-F", cfg, "-tt", f"bh{i:02d}"], stdin=slave, stdout=slave, stderr=slave, start_new_session=True
                )
            except BaseException:
                os.close(master)
                raise
            finally:
                os.close(slave)
            clients.append((proc, master))
            os.write(master, FLOOR_LINE.encode())
        seen = {fd: b"" for _, fd in clients}
        waiting = set(seen)
        deadline = time.monotonic() + 120
        while waiting:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RuntimeError(f"{len(waiting)} of {TARGETS} logins printed no marker in 120 s")
            for fd in select.select(list(waiting), [], [], left)[0]:
                try:
                    chunk = os.read(fd, 65536)
                except OSError:  # EIO: the client ended
                    chunk = b""
                if not chunk:
                    raise RuntimeError(f"a login ended before its marker: {seen[fd][-300:]!r}")
                seen[fd] += chunk
                if b"R42X" in seen[fd]:
                    waiting.discard(fd)
        took = time.perf_counter() - started
        ended = True
    finally:
        stuck = 0
        for proc, fd in clients:
            if not ended:
                proc.kill()
            try:  # the typed exit ends each login
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                stuck += 1
                proc.kill()
                proc.wait()
            os.close(fd)
    if stuck:
        raise RuntimeError(f"{stuck} of {TARGETS} logins did not end on their typed exit within 30 s")
    return took


def first_rounds(pdsh: list[str], pdsh_env: dict[str, str], rounds: int, floor: str | None = None) -> dict:
    """The first command against pdsh, interleaved (one first command is one
    sample on a shared machine): new terminals each time; and the same with
    the side channel off, which opens at a job's first quiet spell only, so
    a quick command never opens it (the two should be alike). ``floor``: the
    ssh config of :func:`floor_once`, timed after pdsh in each round."""
    firsts: dict[str, list[float]] = {"ours_first": [], "ours_first_side_channel_off": [], "pdsh_first_round": []}
    if floor:
        firsts["floor"] = []

    def group(side_channel: bool) -> None:
        if not side_channel:
            os.environ[ENV_SIDE_CHANNEL] = "0"
        terms = Ours(TARGETS)
        try:
            firsts["ours_first" if side_channel else "ours_first_side_channel_off"].append(_timed(terms.once))
        finally:
            terms.close()
            os.environ.pop(ENV_SIDE_CHANNEL, None)

    for i in range(rounds):
        # The two groups take turns at going first: what one group's close
        # leaves the machine to do (sshd ending 16 sessions) falls on
        # whatever runs next, and pdsh runs between them.
        first = i % 2 == 0
        group(first)
        firsts["pdsh_first_round"].append(_timed(lambda: _run(pdsh, pdsh_env)))
        if floor:
            firsts["floor"].append(floor_once(floor))
        group(not first)
    res: dict = {"first_rounds": firsts, "first_median_s": {k: statistics.median(v) for k, v in firsts.items()}}
    med = res["first_median_s"]
    res["first_vs_pdsh"] = med["ours_first"] / med["pdsh_first_round"]
    res["first_side_channel_off_vs_pdsh"] = med["ours_first_side_channel_off"] / med["pdsh_first_round"]
    # each round's own ratio: the load moves all three of a round together
    res["first_vs_pdsh_per_round"] = [a / b for a, b in zip(firsts["ours_first"], firsts["pdsh_first_round"], strict=True)]
    if floor:
        res.update(_floor_ratios(med, "ours_first"))
    return res


def _floor_ratios(med: dict[str, float], ours: str) -> dict[str, float]:
    return {"floor_vs_pdsh": med["floor"] / med["pdsh_first_round"], f"{ours}_vs_floor": med[ours] / med["floor"]}


_CHILD = """
import os, sys, time
from dsh_magics import fanout
from dsh_magics.terminal import Registry, TerminalConfig
n, command = int(sys.argv[1]), sys.argv[2]
reg = Registry(TerminalConfig(login=os.environ.get("DSH_BENCH_LOGIN") == "1", max_sessions=max(16, n), max_lines=1000))
targets = [f"ssh://bh{i:02d}" for i in range(1, n + 1)]
try:
    started = time.perf_counter()
    group = fanout.start(reg, targets, command, book=fanout.GroupBook({}, []))
    assert group.wait(timeout_ms=600_000), "group did not finish"
    rep = fanout.report(group)
    took = time.perf_counter() - started
    assert rep.counts() == {"completed": n}, rep.table()
finally:
    reg.close_all()
print(fanout.__file__)
print(took)
"""


def _first_in(tree: str) -> float:
    """One group's first command in a new process running ``tree``'s package.
    It runs in ``tree``: ``python -c`` puts its working directory first on
    the path, so run from this repository both sides imported this tree's
    package (every ``--ab`` figure before session 35 compared a tree with
    itself); the child says which package it ran."""
    env = {**os.environ, "PYTHONPATH": tree}
    out = _run([sys.executable, "-c", _CHILD, str(TARGETS), COMMAND], env=env, cwd=tree).strip().splitlines()
    package, took = out[-2], out[-1]
    if not os.path.realpath(package).startswith(os.path.realpath(tree) + os.sep):
        raise RuntimeError(f"the round for {tree} ran {package}")
    return float(took)


def ab_rounds(pdsh: list[str], pdsh_env: dict[str, str], rounds: int, before: str, floor: str | None = None) -> dict:
    """The first command of this tree and of ``before``, pdsh between them
    (and the floor after pdsh, with ``floor``), the trees taking turns at
    going first."""
    here = str(Path(__file__).resolve().parent.parent)
    firsts: dict[str, list[float]] = {"after": [], "before": [], "pdsh_first_round": []}
    if floor:
        firsts["floor"] = []
    for i in range(rounds):
        order = [("after", here), ("before", before)]
        if i % 2:
            order.reverse()
        firsts[order[0][0]].append(_first_in(order[0][1]))
        firsts["pdsh_first_round"].append(_timed(lambda: _run(pdsh, pdsh_env)))
        if floor:
            firsts["floor"].append(floor_once(floor))
        firsts[order[1][0]].append(_first_in(order[1][1]))
    med = {k: statistics.median(v) for k, v in firsts.items()}
    per_round = [a / b for a, b in zip(firsts["after"], firsts["before"], strict=True)]
    return {
        **(_floor_ratios(med, "after") if floor else {}),
        "first_rounds": firsts, "first_median_s": med,
        "after_vs_before": med["after"] / med["before"],
        "after_vs_before_per_round": per_round,
        "after_faster_rounds": sum(r < 1 for r in per_round),
        "after_vs_pdsh": med["after"] / med["pdsh_first_round"],
        "before_vs_pdsh": med["before"] / med["pdsh_first_round"],
    }


def _cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def _reaped_by(pid: int) -> float:
    """CPU seconds of the children ``pid`` has reaped (its cutime + cstime):
    for the benchmark's sshd, every session of every contender."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[13]) + int(fields[14])) / os.sysconf("SC_CLK_TCK")


def cpu_rounds(pdsh: list[str], pdsh_env: dict[str, str], rounds: int, sshd: Sshd, floor: str | None = None) -> dict:
    """Where a first command's CPU goes (in this process, this tree), against
    pdsh's, in turn: the engine's own process (to the report), the local
    children it reaps (the ssh clients, and what ran in them before their
    exec), and the sshd side (every session's processes: sshd, the user's
    shell and ~/.bashrc, the remote bash and its set-up, the job). Each
    round waits until sshd has reaped its sessions before it reads.
    ``floor``: :func:`floor_once`'s logins too, after pdsh."""

    def connections() -> bool:  # a child of the listener is one connection's sshd
        return any(e.isdigit() and ppid(int(e)) == sshd.proc.pid for e in os.listdir("/proc"))

    def settled() -> None:
        deadline = time.monotonic() + 30
        while connections() and time.monotonic() < deadline:
            time.sleep(0.05)  # (a benchmark's pause between rounds, not a synchronisation)

    kinds = ("engine", "clients", "sshd", "pdsh_clients", "pdsh_sshd") + (("floor_clients", "floor_sshd") if floor else ())
    rows: dict[str, list[float]] = {k: [] for k in kinds}
    group = Ours(TARGETS)
    try:
        group.once()  # imports and first-use work out of the rounds
    finally:
        group.close()
    settled()
    for _ in range(rounds):
        mine, kids, remote = _cpu(resource.RUSAGE_SELF), _cpu(resource.RUSAGE_CHILDREN), _reaped_by(sshd.proc.pid)
        group = Ours(TARGETS)
        try:
            group.once()
            rows["engine"].append(_cpu(resource.RUSAGE_SELF) - mine)
        finally:
            group.close()
        settled()
        rows["clients"].append(_cpu(resource.RUSAGE_CHILDREN) - kids)
        rows["sshd"].append(_reaped_by(sshd.proc.pid) - remote)
        kids, remote = _cpu(resource.RUSAGE_CHILDREN), _reaped_by(sshd.proc.pid)
        _run(pdsh, pdsh_env)
        settled()
        rows["pdsh_clients"].append(_cpu(resource.RUSAGE_CHILDREN) - kids)
        rows["pdsh_sshd"].append(_reaped_by(sshd.proc.pid) - remote)
        if floor:
            kids, remote = _cpu(resource.RUSAGE_CHILDREN), _reaped_by(sshd.proc.pid)
            floor_once(floor)
            settled()
            rows["floor_clients"].append(_cpu(resource.RUSAGE_CHILDREN) - kids)
            rows["floor_sshd"].append(_reaped_by(sshd.proc.pid) - remote)
    med = {k: statistics.median(v) for k, v in rows.items()}
    ours = med["engine"] + med["clients"] + med["sshd"]
    theirs = med["pdsh_clients"] + med["pdsh_sshd"]
    res: dict = {"cpu_rounds": rows, "cpu_median_s": med, "cpu_ours_s": ours, "cpu_pdsh_s": theirs, "cpu_ours_vs_pdsh": ours / theirs}
    if floor:
        bare = med["floor_clients"] + med["floor_sshd"]
        res.update(cpu_floor_s=bare, cpu_ours_vs_floor=ours / bare)
    return res


class SkelUser:
    """A throwaway local user whose home is a copy of ``/etc/skel``, for
    ``--home skel``: created by :meth:`create`, removed with its home, its
    group and its mail spool by :meth:`remove` once no process of it is
    left (the sshd's sessions end when the benchmark stops its sshd)."""

    def __init__(self) -> None:
        self.name = f"dsh-bench-fan-{os.getpid()}"
        self.uid: int | None = None

    def create(self) -> None:
        if os.geteuid() != 0:
            sys.exit("bench_fanout.py: --home skel creates a throwaway user (useradd): run it as root")
        if not os.path.isfile("/etc/skel/.bashrc"):
            sys.exit("bench_fanout.py: --home skel needs /etc/skel/.bashrc (Debian's stock one)")
        # password "*": no password, but not locked ("!"), which sshd refuses
        # without PAM; no subordinate id ranges: nothing in /etc/subuid to remove
        _run(["useradd", "--create-home", "--skel", "/etc/skel", "--shell", "/bin/bash", "--password", "*",
              "-K", "SUB_UID_COUNT=0", "-K", "SUB_GID_COUNT=0", self.name])  # fmt: skip
        self.uid = pwd.getpwnam(self.name).pw_uid

    def _pids(self) -> list[int]:
        pids = []
        for entry in os.listdir("/proc"):
            try:
                if entry.isdigit() and os.stat(f"/proc/{entry}").st_uid == self.uid:
                    pids.append(int(entry))
            except FileNotFoundError:
                pass
        return pids

    def remove(self) -> None:
        if self.uid is None:
            return
        deadline = time.monotonic() + 10
        while self._pids() and time.monotonic() < deadline:
            time.sleep(0.05)  # (sessions the stopped sshd hung up, still ending)
        for pid in self._pids():  # the user is this run's own: what it runs is too
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        done = subprocess.run(["userdel", "--remove", self.name], capture_output=True, text=True, timeout=60)
        if done.returncode not in (0, 12):  # 12: no mail spool to remove
            raise RuntimeError(f"userdel {self.name} failed ({done.returncode}): {done.stderr.strip()}")
        self.uid = None


def _sigterm(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # (so the finally blocks remove the user and stop sshd)


def pdsh_setup(cfg: str) -> tuple[list[str], dict[str, str]]:
    hosts = f"bh[01-{TARGETS:02d}]"
    login = ["-l", REMOTE_USER] if REMOTE_USER else []
    return ["pdsh", "-R", "ssh", *login, "-w", hosts, COMMAND], {
        **os.environ, "PDSH_RCMD_TYPE": "ssh", "PDSH_SSH_ARGS": f"-F {cfg} -x -l%u %h"
    }


def measure(cfg: str, key: str, port: int, reps: int, max_targets: int) -> dict:
    res: dict = {"targets": TARGETS, "reps": reps, "command": COMMAND, "load_before": _load()}
    hosts = f"bh[01-{TARGETS:02d}]"
    user = REMOTE_USER or os.environ.get("USER") or "root"
    pdsh, pdsh_env = pdsh_setup(cfg)
    control = tempfile.mkdtemp(prefix="bench-cm-")
    cm_env = {
        **pdsh_env,
        "PDSH_SSH_ARGS": f"-F {cfg} -o ControlMaster=auto -o ControlPath={control}/%h -o ControlPersist=120 -x -l%u %h",
    }
    rows: dict[str, list[float]] = {"pdsh": [], "pdsh_controlmaster": [], "clush": []}
    ours = Ours(TARGETS)
    try:
        res["ours_first_s"] = _timed(ours.once)
        rows["ours_repeated"] = [_timed(ours.once) for _ in range(reps)]
    finally:
        ours.close()
    res.update(first_rounds(pdsh, pdsh_env, FIRST_REPS if reps > 5 else 3))
    res["pdsh_controlmaster_first_s"] = _timed(lambda: _run(pdsh, cm_env))
    for _ in range(reps):
        rows["pdsh"].append(_timed(lambda: _run(pdsh, pdsh_env)))
        rows["pdsh_controlmaster"].append(_timed(lambda: _run(pdsh, cm_env)))
        if shutil.which("clush"):
            login = ["-l", REMOTE_USER] if REMOTE_USER else []
            rows["clush"].append(_timed(lambda: _run(["clush", "-b", *login, "-o", f"-F {cfg}", "-w", hosts, COMMAND])))  # noqa: B023
    for h in range(1, TARGETS + 1):  # end pdsh's control masters
        subprocess.run(["ssh", "-F", cfg, "-o", f"ControlPath={control}/bh{h:02d}", "-O", "exit", f"bh{h:02d}"],
                       capture_output=True, timeout=30)  # fmt: skip
    shutil.rmtree(control, ignore_errors=True)
    try:
        from pssh.clients import ParallelSSHClient  # the bench extra; not typed

        def pssh_once(client) -> None:
            out = client.run_command(COMMAND)
            client.join(out)
            assert all(o.exit_code == 0 and list(o.stdout) for o in out)

        client = ParallelSSHClient(["127.0.0.1"] * TARGETS, user=user, port=port, pkey=key, allow_agent=False, num_retries=1)
        res["pssh_first_s"] = _timed(lambda: pssh_once(client))
        rows["pssh_repeated"] = [_timed(lambda: pssh_once(client)) for _ in range(reps)]
        # its default for a new call site: a new client, so new connections, each time
        rows["pssh_new_client"] = [
            _timed(lambda: pssh_once(ParallelSSHClient(["127.0.0.1"] * TARGETS, user=user, port=port, pkey=key,
                                                        allow_agent=False, num_retries=1)))  # fmt: skip
            for _ in range(reps)
        ]
    except ImportError:
        res["pssh"] = "not installed (pip install '.[bench]')"
    res["median_s"] = {k: statistics.median(v) for k, v in rows.items() if v}
    peers = {k: v for k, v in res["median_s"].items() if k != "ours_repeated"}
    fastest = min(peers, key=peers.__getitem__)
    res["fastest_peer"] = fastest
    res["repeated_speedup_vs_fastest"] = peers[fastest] / res["median_s"]["ours_repeated"]
    res["curve"] = curve(max_targets, max(3, reps // 4))
    res["load_after"] = _load()
    return res


def curve(max_targets: int, reps: int) -> list[dict]:
    """First and repeated group command, and pdsh, for 1, 2, 4, ... targets."""
    out = []
    n = 1
    while n <= max_targets:
        ours = Ours(n)
        try:
            first = _timed(ours.once)
            warm = statistics.median(_timed(ours.once) for _ in range(reps))
        finally:
            ours.close()
        out.append({"targets": n, "ours_first_s": first, "ours_repeated_s": warm})
        n *= 2
    return out


def pdsh_curve(cfg: str, max_targets: int) -> list[float]:
    env = {**os.environ, "PDSH_RCMD_TYPE": "ssh", "PDSH_SSH_ARGS": f"-F {cfg} -x -l%u %h"}
    login = ["-l", REMOTE_USER] if REMOTE_USER else []
    times = []
    n = 1
    while n <= max_targets:
        hosts = f"bh[01-{n:02d}]" if n > 1 else "bh01"
        times.append(_timed(lambda: _run(["pdsh", "-R", "ssh", *login, "-w", hosts, COMMAND], env)))  # noqa: B023
        n *= 2
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="5 repetitions, curve to 16 targets")
    ap.add_argument("--json", help="write the figures here too")
    ap.add_argument("--max-targets", type=int, default=64)
    ap.add_argument("--first-only", action="store_true", help="only the first command against pdsh, interleaved")
    ap.add_argument("--first-rounds", type=int, default=9, help="rounds of --first-only")
    ap.add_argument("--ab", metavar="DIR", help="with --first-only: another tree's first command in turn (before/after)")
    ap.add_argument(
        "--floor", action="store_true",
        help="with --first-only: plain interactive ssh logins (no engine) in each round, after pdsh",
    )  # fmt: skip
    ap.add_argument("--cpu", action="store_true", help="with --first-only: where the first command's CPU goes, against pdsh's")
    ap.add_argument(
        "--rehash-timeout", type=int, metavar="S",
        help="PYENV_REHASH_TIMEOUT for the sessions (default: the environment's, else 1 as in the tests); "
        "how long a session's ~/.bashrc waits for pyenv's rehash lock (0: to the next whole second, -1: never)",
    )  # fmt: skip
    ap.add_argument("--login", action="store_true", help="groups with login=True (the default config) instead of login=False")
    ap.add_argument(
        "--home", choices=("own", "skel"), default="own",
        help="skel: every contender logs in as a throwaway user whose home is /etc/skel's (root only; removed at the end)",
    )  # fmt: skip
    args = ap.parse_args()
    global LOGIN, REMOTE_USER
    if args.login:  # (the --ab rounds' processes read it from the environment)
        LOGIN = True
        os.environ["DSH_BENCH_LOGIN"] = "1"
    if args.rehash_timeout is not None:
        os.environ["PYENV_REHASH_TIMEOUT"] = str(args.rehash_timeout)  # (start_sshd passes it to the sessions)
    skel = SkelUser() if args.home == "skel" else None
    signal.signal(signal.SIGTERM, _sigterm)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # (also when started with SIGINT ignored)
    try:
        if skel:
            skel.create()
            REMOTE_USER = skel.name
        run(args, skel)
    finally:
        if skel:
            skel.remove()


def run(args: argparse.Namespace, skel: SkelUser | None) -> None:
    from tests.fanout.fleet import ssh_aliases
    from tests.sshd import start_sshd

    server = start_sshd(Path(tempfile.mkdtemp(prefix="dsh-bench-fanout-")))
    if skel:  # sshd reads authorized_keys as the user logging in
        os.chmod(server.dir, 0o711)
        os.chmod(server.dir / "authorized_keys", 0o644)
    try:
        max_targets = 16 if args.quick else args.max_targets
        names = [f"bh{i:02d}" for i in range(1, max(max_targets, TARGETS) + 1)]
        options = ssh_aliases(server, names, user=REMOTE_USER)
        os.environ[ENV_SSH_OPTIONS] = options
        cfg = options.split(" ", 1)[1]
        floor = cfg if args.floor else None
        if args.first_only:
            res: dict = {"targets": TARGETS, "command": COMMAND, "load_before": _load()}
            if args.cpu:
                res.update(cpu_rounds(*pdsh_setup(cfg), args.first_rounds, server, floor))
            elif args.ab:
                res.update(ab_rounds(*pdsh_setup(cfg), args.first_rounds, os.path.abspath(args.ab), floor))
            else:
                res.update(first_rounds(*pdsh_setup(cfg), args.first_rounds, floor))
            res["load_after"] = _load()
        else:
            res = measure(cfg, str(server.dir / "id_user"), server.port, 5 if args.quick else 20, max_targets)
            for row, pdsh_s in zip(res["curve"], pdsh_curve(cfg, max_targets), strict=True):
                row["pdsh_s"] = pdsh_s
        res["login"] = LOGIN
        res["home"] = args.home
        res["uptime"] = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)
    print(json.dumps(res, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
