"""What a person at ``dsh-magics attach`` feels, against ``tmux attach`` in the same run.

    python benchmarks/bench_attach.py [--keys N] [--rounds R] [--baseline DIR]... [--floor] [--json]

Both clients run in a PTY of this script (100x30), the way a terminal emulator
runs them:

- key to echo: a key is written to the client's terminal and the time until
  the first bytes the client draws in answer is taken (nothing else draws
  meanwhile); keys alternate ``x`` and Backspace so the line stays short. At a
  bash prompt (readline: a person's prompt for attach, bash in a tmux pane for
  tmux) and in vim's insert mode. Median and p99 in ms. Targets: median
  <= 1.5x tmux, p99 < 10 ms. All clients are attached at once and take turns
  key by key (who goes first rotates), so a change of the machine's load
  falls on all of them alike.
- output rate: ``seq 1 1000000`` (6.9 MB) in the terminal until the attached
  client has drawn the line printed after it; MB/s. Target: attach >= 0.8x tmux.
  (attach: started by the notebook side, ``exec``; tmux: typed in the pane.)

``--baseline DIR`` also measures the attach client and host of another
checkout (DIR holds its ``dsh_magics``; e.g. ``git archive REV dsh_magics |
tar -x -C DIR``) in the same turns, for before/after figures under the same
load; given again, a third checkout (``baseline2``) and so on. ``--floor`` adds a bare Python relay of the same shape (:data:`_FLOOR_HOST`):
what the five wake-ups cost a Python program that does nothing else.

The host runs in a private runtime directory and is stopped at the end, as
is the tmux server.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import time
from typing import Any

import dsh_magics
from dsh_magics.host import HostClient, HostPaths, stop_host
from dsh_magics.terminal.core import fdwait

COLS, ROWS = 100, 30
SEQ_N = 1_000_000
SEQ_BYTES = sum(len(str(i)) + 1 for i in range(1, SEQ_N + 1))


class Pty:
    """A client program on a PTY of ours."""

    def __init__(self, argv: list[str], env: dict[str, str], cwd: str | None = None) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", ROWS, COLS, 0, 0))
        self.proc = subprocess.Popen(
            argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, start_new_session=True
        )
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


KEYS = (b"x", b"\x7f")


def _stats(ms: list[float]) -> dict[str, Any]:
    ms = sorted(ms)
    return {"median_ms": round(statistics.median(ms), 3), "p99_ms": round(ms[min(len(ms) - 1, int(len(ms) * 0.99))], 3)}


#: Starts a host with a session "b" and leaves (the host stays): run with the
#: checkout under test on PYTHONPATH.
_START_HOST = """
import sys, tempfile
from dsh_magics.host import HostClient, HostPaths
c = HostClient(HostPaths.for_name("bench", sys.argv[1]))
c.connect()
c.attach("b", cwd=tempfile.gettempdir())
c.exec("b", "echo ready", wait_ms=20_000)
c.detach()
"""


class Tmux:
    name = "tmux"

    def __init__(self, env: dict[str, str]) -> None:
        self.sock = f"dsh-bench-{os.getpid()}"
        subprocess.run(
            ["tmux", "-L", self.sock, "-f", "/dev/null", "new-session", "-d", "-s", "b", "-x", str(COLS), "-y", str(ROWS),
             "env", "PS1=$ ", "bash", "--norc", "--noprofile"], check=True, env=env, cwd=tempfile.gettempdir(),
        )  # fmt: skip
        subprocess.run(["tmux", "-L", self.sock, "set", "-g", "status", "off"], check=True)  # no clock redraws
        self.p = Pty(["tmux", "-L", self.sock, "attach", "-t", "b"], env)
        subprocess.run(["tmux", "-L", self.sock, "send-keys", "-t", "b", "echo ready", "Enter"], check=True)
        self.p.read_until(b"ready")

    def to_prompt(self) -> None:
        self.p.drain(0.2)

    def seq(self) -> None:
        os.write(self.p.master, f"seq 1 {SEQ_N}; echo SEQ-DONE-$((6 * 7))\r".encode())

    def close(self) -> None:
        self.p.close()
        path = subprocess.run(["tmux", "-L", self.sock, "display-message", "-p", "#{socket_path}"],
                              capture_output=True, text=True).stdout.strip()  # fmt: skip
        subprocess.run(["tmux", "-L", self.sock, "kill-server"], capture_output=True)
        if path and os.path.exists(path):
            os.unlink(path)


#: The least a Python relay of the same shape does (``--floor``): a host
#: process with bash on a PTY, one thread writing what the client sends to
#: the PTY and one sending what the PTY prints to the client, raw bytes on a
#: Unix socket, no protocol, no engine.
_FLOOR_HOST = """
import os, pty, socket, struct, sys, threading, fcntl, termios
path = sys.argv[1]
pid, master = pty.fork()
if pid == 0:
    os.environ["PS1"] = "$ "
    os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])
fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
srv.listen(1)
print("listening", flush=True)
conn, _ = srv.accept()
def keys():
    while True:
        data = conn.recv(65536)
        if not data:
            os._exit(0)
        os.write(master, data)
threading.Thread(target=keys, daemon=True).start()
while True:
    try:
        data = os.read(master, 65536)
    except OSError:
        os._exit(0)
    if not data:
        os._exit(0)
    conn.sendall(data)
"""

_FLOOR_CLIENT = """
import os, select, socket, sys, tty
sock = socket.socket(socket.AF_UNIX)
sock.connect(sys.argv[1])
tty.setraw(0)
while True:
    ready, _, _ = select.select([0, sock], [], [])
    if 0 in ready:
        data = os.read(0, 65536)
        if not data:
            break
        sock.sendall(data)
    if sock in ready:
        data = sock.recv(65536)
        if not data:
            break
        os.write(1, data)
"""


class Floor:
    """The Python relay of :data:`_FLOOR_HOST`: what five wake-ups in three
    processes cost when each step is Python, with nothing else done."""

    name = "pyfloor"

    def __init__(self, env: dict[str, str]) -> None:
        self.dir = tempfile.mkdtemp(prefix="dshf-", dir="/tmp")
        path = os.path.join(self.dir, "s")
        self.host = subprocess.Popen([sys.executable, "-c", _FLOOR_HOST, path], env=env, stdout=subprocess.PIPE,
                                     cwd=tempfile.gettempdir(), start_new_session=True)  # fmt: skip
        assert self.host.stdout is not None
        self.host.stdout.readline()  # listening
        self.p = Pty([sys.executable, "-c", _FLOOR_CLIENT, path], env)
        try:
            self.p.read_until(b"$ ")  # bash's first prompt: it drops what was typed before
            os.write(self.p.master, b"echo rea''dy\r")
            self.p.read_until(b"ready")
        except BaseException:
            self.close()  # not yet among the clients the caller closes
            raise

    def to_prompt(self) -> None:
        self.p.drain(0.2)

    def seq(self) -> None:
        os.write(self.p.master, f"seq 1 {SEQ_N}; echo SEQ-DONE-$((6 * 7))\r".encode())

    def close(self) -> None:
        self.p.close()
        try:
            os.killpg(self.host.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass  # it ended with its client
        self.host.wait(10)
        assert self.host.stdout is not None
        self.host.stdout.close()
        shutil.rmtree(self.dir, ignore_errors=True)


class Attach:
    """``dsh-magics attach`` and its host, both from the checkout at ``tree``."""

    #: Put on PYTHONPATH after ``tree`` (trace_attach.py's sitecustomize).
    extra_path = ""

    def __init__(self, name: str, tree: str, env: dict[str, str]) -> None:
        self.name = name
        self.dir = tempfile.mkdtemp(prefix="dshb-", dir="/tmp")
        os.chmod(self.dir, 0o700)
        env = dict(env, PYTHONPATH=tree + (os.pathsep + self.extra_path if self.extra_path else ""))
        # Run from ``tree``: ``python -c`` and ``-m`` put the current directory
        # first on sys.path, so from a checkout's root they would import that
        # checkout's dsh_magics whatever PYTHONPATH says.
        subprocess.run([sys.executable, "-c", _START_HOST, self.dir], env=env, cwd=tree, check=True, timeout=120)
        self.host = HostClient(HostPaths.for_name("bench", self.dir), autostart=False)
        self.host.connect()
        self.p = Pty([sys.executable, "-m", "dsh_magics.cli", "attach", "b", "--host-dir", self.dir], env, cwd=tree)
        self.p.read_until(b"ready")
        self.job: Any = None

    def to_prompt(self) -> None:
        os.write(self.p.master, b"a")  # opens the person's prompt
        self.p.read_until(b"a")
        self.p.drain(0.2)

    def seq(self) -> None:
        self.job = self.host.exec("b", f"seq 1 {SEQ_N}; echo SEQ-DONE-$((6 * 7))")

    def close(self) -> None:
        try:
            self.p.close()
            if self.job is not None:
                self.job.wait(60)
            self.host.close_all()
            self.host.detach()
        finally:
            try:
                stop_host(HostPaths.for_name("bench", self.dir))
            finally:
                shutil.rmtree(self.dir, ignore_errors=True)


def _turns(clients: list[Any], n: int, out: dict[str, list[float]]) -> None:
    """``n`` keys to each client, one client after the other; who goes first
    rotates (what one client's host does after an echo must not always fall
    on the same next client)."""
    for i in range(n):
        first = i % len(clients)
        for c in clients[first:] + clients[:first]:
            out[c.name].append(c.p.echo_ms(KEYS[i % 2]))


def one_round(clients: list[Any], n: int) -> dict[str, dict[str, Any]]:
    prompt: dict[str, list[float]] = {c.name: [] for c in clients}
    vim: dict[str, list[float]] = {c.name: [] for c in clients}
    rate: dict[str, float] = {}
    for c in clients:
        c.to_prompt()
    _turns(clients, n, prompt)
    for c in clients:
        os.write(c.p.master, b"\x15vim -u NONE -N -n dsh-bench-vim.txt\r")  # Ctrl-U, then the command (-n: no swap file)
        c.p.read_until(b"[New")
        os.write(c.p.master, b"i")
        c.p.read_until(b"INSERT")
    _turns(clients, n, vim)
    for c in clients:
        os.write(c.p.master, b"\x1b:q!\r")
        c.p.drain(0.5)
    for c in clients:  # one at a time: a flood takes the machine
        c.p.seen.clear()  # the last round's end is not this one's
        t0 = time.perf_counter()
        c.seq()
        c.p.read_until(b"SEQ-DONE-42", 120)
        rate[c.name] = SEQ_BYTES / (time.perf_counter() - t0) / 1e6
        c.p.drain(0.3)
    return {c.name: {"prompt": prompt[c.name], "vim": vim[c.name], "seq_MBps": rate[c.name]} for c in clients}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--baseline", metavar="DIR", action="append", default=[],
                    help="another checkout's dsh_magics to measure in the same turns (again for more: baseline2, ...)")
    ap.add_argument("--floor", action="store_true", help="also a bare Python relay of the same shape (the floor)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    env = dict(os.environ, TERM="xterm-256color", DSH_MAGICS_LOGIN="0")
    env.pop("TMUX", None)
    here = os.path.dirname(os.path.dirname(os.path.abspath(dsh_magics.__file__)))
    clients: list[Any] = []
    rounds: list[dict[str, dict[str, Any]]] = []
    load = [os.getloadavg()[0]]
    try:
        clients.append(Tmux(env))
        if args.floor:
            clients.append(Floor(env))
        for i, tree in enumerate(args.baseline):
            clients.append(Attach("baseline" + (str(i + 1) if i else ""), os.path.abspath(tree), env))
        clients.append(Attach("attach", here, env))
        for _ in range(args.rounds):
            rounds.append(one_round(clients, args.keys))
            load.append(os.getloadavg()[0])
    finally:
        for c in clients:
            c.close()
    names = [c.name for c in clients]
    out: dict[str, Any] = {}
    for name in names:
        out[name] = {where: _stats([t for r in rounds for t in r[name][where]]) for where in ("prompt", "vim")}
        out[name]["seq_MBps"] = round(statistics.median(r[name]["seq_MBps"] for r in rounds), 2)
    out["load"] = [round(x, 1) for x in load]
    tmux = out["tmux"]
    for name in names[1:]:
        for where in ("prompt", "vim"):
            out[name][f"{where}_median_ratio"] = round(out[name][where]["median_ms"] / tmux[where]["median_ms"], 2)
        out[name]["seq_rate_ratio"] = round(out[name]["seq_MBps"] / tmux["seq_MBps"], 2)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(f"{args.rounds} round(s) of {args.keys} keys each; load average {min(load):.1f}-{max(load):.1f}")
    for where in ("prompt", "vim"):
        t = tmux[where]
        print(f"{where:6} key->echo  tmux     median {t['median_ms']:.2f} ms p99 {t['p99_ms']:.2f} ms")
        for name in names[1:]:
            a = out[name][where]
            print(f"{'':6}            {name:8} median {a['median_ms']:.2f} ms p99 {a['p99_ms']:.2f} ms "
                  f"ratio {out[name][where + '_median_ratio']}")
    print(f"seq 1 {SEQ_N}: tmux {tmux['seq_MBps']} MB/s, "
          + ", ".join(f"{n} {out[n]['seq_MBps']} MB/s (ratio {out[n]['seq_rate_ratio']})" for n in names[1:]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
