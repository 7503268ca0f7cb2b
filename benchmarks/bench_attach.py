"""What a person at ``dsh-magics attach`` feels, against ``tmux attach`` in the same run.

    python benchmarks/bench_attach.py [--keys N] [--rounds R] [--baseline DIR] [--json]

Both clients run in a PTY of this script (100x30), the way a terminal emulator
runs them:

- key to echo: a key is written to the client's terminal and the time until
  the first bytes the client draws in answer is taken (nothing else draws
  meanwhile); keys alternate ``x`` and Backspace so the line stays short. At a
  bash prompt (readline: a person's prompt for attach, bash in a tmux pane for
  tmux) and in vim's insert mode. Median and p99 in ms. Targets: median
  <= 1.5x tmux, p99 < 10 ms.
- output rate: ``seq 1 1000000`` (6.9 MB) in the terminal until the attached
  client has drawn the line printed after it; MB/s. Target: attach >= 0.8x tmux.
  (attach: started by the notebook side, ``exec``; tmux: typed in the pane.)

``--baseline DIR`` also measures the attach client and host of another
checkout (DIR holds its ``dsh_magics``; e.g. ``git archive REV dsh_magics |
tar -x -C DIR``) in the same rounds, for before/after figures under the same
load: each round runs tmux, the baseline, then this checkout.

The host runs in a private runtime directory and is stopped at the end, as
is the tmux server.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from typing import Any

from dsh_magics.host import HostClient, HostPaths, stop_host
from dsh_magics.terminal.core import fdwait

COLS, ROWS = 100, 30
SEQ_N = 1_000_000
SEQ_BYTES = sum(len(str(i)) + 1 for i in range(1, SEQ_N + 1))


class Pty:
    """A client program on a PTY of ours."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
        os.close(slave)
        self.seen = bytearray()

    def read_until(self, needle: bytes, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while needle not in self.seen[-max(len(needle) * 4, 65536) :]:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{needle!r} not drawn; tail: {bytes(self.seen[-300:])!r}")
            if fdwait.readable([self.master], left):
                self.seen += os.read(self.master, 1 << 16)

    def drain(self, quiet: float = 0.03) -> None:
        while fdwait.readable([self.master], quiet):
            try:
                self.seen += os.read(self.master, 1 << 16)
            except OSError:
                return

    def echo_ms(self, key: bytes) -> float:
        """Write ``key``; milliseconds until the first bytes drawn in answer."""
        self.drain()
        t0 = time.perf_counter()
        os.write(self.master, key)
        if not fdwait.readable([self.master], 5.0):
            raise TimeoutError(f"no echo for {key!r}")
        t = (time.perf_counter() - t0) * 1000
        self.seen += os.read(self.master, 1 << 16)
        return t

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self.master)


def _keys(p: Pty, n: int) -> list[float]:
    out = []
    for i in range(n):
        out.append(p.echo_ms(b"x" if i % 2 == 0 else b"\x7f"))
    return out


def _stats(ms: list[float]) -> dict[str, Any]:
    ms = sorted(ms)
    return {"median_ms": round(statistics.median(ms), 3), "p99_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 3)}


def _times(ms: list[float]) -> dict[str, Any]:
    return dict(_stats(ms), ms=[round(t, 4) for t in ms])


def run_attach(d: str, n: int, env: dict[str, str]) -> dict[str, Any]:
    c = HostClient(HostPaths.for_name("bench", d))
    c.connect()
    c.attach("b", cwd=tempfile.gettempdir())
    c.exec("b", "echo ready", wait_ms=20_000)
    p = Pty([sys.executable, "-m", "dsh_magics.cli", "attach", "b", "--host-dir", d], env)
    try:
        p.read_until(b"ready")
        os.write(p.master, b"a")  # opens the person's prompt
        p.read_until(b"a")
        p.drain(0.2)
        prompt = _keys(p, n)
        os.write(p.master, b"\x15vim -u NONE -N dsh-bench-vim.txt\r")  # Ctrl-U, then the command
        p.read_until(b"[New")
        os.write(p.master, b"i")
        p.read_until(b"INSERT")
        vim = _keys(p, n)
        os.write(p.master, b"\x1b:q!\r")
        p.drain(0.5)
        job = c.exec("b", f"seq 1 {SEQ_N}; echo SEQ-DONE-$((6 * 7))")
        t0 = time.perf_counter()
        p.read_until(b"SEQ-DONE-42", 120)
        rate = SEQ_BYTES / (time.perf_counter() - t0) / 1e6
        job.wait(60)
    finally:
        p.close()
        c.close_all()
        c.detach()
    return {"prompt": _times(prompt), "vim": _times(vim), "seq_MBps": round(rate, 2)}


def run_tmux(n: int, env: dict[str, str]) -> dict[str, Any]:
    sock = f"dsh-bench-{os.getpid()}"
    subprocess.run(
        ["tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "b", "-x", str(COLS), "-y", str(ROWS),
         "env", "PS1=$ ", "bash", "--norc", "--noprofile"], check=True, env=env, cwd=tempfile.gettempdir(),
    )  # fmt: skip
    subprocess.run(["tmux", "-L", sock, "set", "-g", "status", "off"], check=True)  # no clock redraws
    p = Pty(["tmux", "-L", sock, "attach", "-t", "b"], env)
    try:
        subprocess.run(["tmux", "-L", sock, "send-keys", "-t", "b", "echo ready", "Enter"], check=True)
        p.read_until(b"ready")
        p.drain(0.2)
        prompt = _keys(p, n)
        os.write(p.master, b"\x15vim -u NONE -N dsh-bench-vim.txt\r")
        p.read_until(b"[New")
        os.write(p.master, b"i")
        p.read_until(b"INSERT")
        vim = _keys(p, n)
        os.write(p.master, b"\x1b:q!\r")
        p.drain(0.5)
        t0 = time.perf_counter()
        os.write(p.master, f"seq 1 {SEQ_N}; echo SEQ-DONE-$((6 * 7))\r".encode())
        p.read_until(b"SEQ-DONE-42", 120)
        rate = SEQ_BYTES / (time.perf_counter() - t0) / 1e6
    finally:
        p.close()
        path = subprocess.run(["tmux", "-L", sock, "display-message", "-p", "#{socket_path}"], capture_output=True, text=True).stdout.strip()
        subprocess.run(["tmux", "-L", sock, "kill-server"], capture_output=True)
        if path and os.path.exists(path):
            os.unlink(path)
    return {"prompt": _times(prompt), "vim": _times(vim), "seq_MBps": round(rate, 2)}


def run_attach_in(tree: str | None, n: int, env: dict[str, str]) -> dict[str, Any]:
    """``run_attach`` with the host and client of this process's checkout, or
    (``tree``) of another one, run in a child process importing from there."""
    d = tempfile.mkdtemp(prefix="dshb-", dir="/tmp")
    os.chmod(d, 0o700)
    try:
        if tree is None:
            return run_attach(d, n, env)
        child_env = dict(env, PYTHONPATH=tree)
        out = subprocess.run(
            [sys.executable, __file__, "--part", "attach", "--keys", str(n), "--host-dir", d],
            env=child_env, capture_output=True, text=True, check=True, timeout=600,
        )  # fmt: skip
        return json.loads(out.stdout)  # type: ignore[no-any-return]
    finally:
        try:
            stop_host(HostPaths.for_name("bench", d))
        finally:
            shutil.rmtree(d, ignore_errors=True)


def _pooled(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """The rounds' key times together (median and p99 over all keys), and their rates' median."""
    out: dict[str, Any] = {}
    for where in ("prompt", "vim"):
        out[where] = _stats([t for r in rounds for t in r[where]["ms"]])
    out["seq_MBps"] = round(statistics.median(r["seq_MBps"] for r in rounds), 2)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--baseline", metavar="DIR", help="another checkout's dsh_magics to measure in the same rounds")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--part", choices=["attach"], help=argparse.SUPPRESS)  # a baseline's child process
    ap.add_argument("--host-dir", help=argparse.SUPPRESS)
    args = ap.parse_args()
    env = dict(os.environ, TERM="xterm-256color", DSH_MAGICS_LOGIN="0")
    env.pop("TMUX", None)
    if args.part == "attach":
        print(json.dumps(run_attach(args.host_dir, args.keys, env)))
        return 0
    clients = ["tmux"] + (["baseline"] if args.baseline else []) + ["attach"]
    rounds: dict[str, list[dict[str, Any]]] = {c: [] for c in clients}
    load = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        rounds["tmux"].append(run_tmux(args.keys, env))
        if args.baseline:
            rounds["baseline"].append(run_attach_in(os.path.abspath(args.baseline), args.keys, env))
        rounds["attach"].append(run_attach_in(None, args.keys, env))
        load.append(os.getloadavg()[0])
    out: dict[str, Any] = {c: _pooled(rounds[c]) for c in clients}
    out["load"] = [round(x, 1) for x in load]
    tmux = out["tmux"]
    for c in clients[1:]:
        for where in ("prompt", "vim"):
            out[c][f"{where}_median_ratio"] = round(out[c][where]["median_ms"] / tmux[where]["median_ms"], 2)
        out[c]["seq_rate_ratio"] = round(out[c]["seq_MBps"] / tmux["seq_MBps"], 2)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{args.rounds} round(s) of {args.keys} keys; load average {min(load):.1f}-{max(load):.1f}")
    for where in ("prompt", "vim"):
        t = tmux[where]
        print(f"{where:6} key->echo  tmux median {t['median_ms']:.2f} ms p99 {t['p99_ms']:.2f} ms")
        for c in clients[1:]:
            a = out[c][where]
            print(f"{'':6}            {c:8} median {a['median_ms']:.2f} ms p99 {a['p99_ms']:.2f} ms "
                  f"ratio {out[c][where + '_median_ratio']}")
    print(f"seq 1 {SEQ_N}: tmux {tmux['seq_MBps']} MB/s, "
          + ", ".join(f"{c} {out[c]['seq_MBps']} MB/s (ratio {out[c]['seq_rate_ratio']})" for c in clients[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
