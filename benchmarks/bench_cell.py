"""What a notebook cell costs: ``%bash_exec --wait true`` and friends against a
no-op Python cell, in one real kernel (jupyter_client), in the same run.

Each cell is timed twice: on the client (execute_request sent -> the cell's
``idle`` status received, everything the front end sees) and in the kernel
(the ``busy`` and ``idle`` status messages' own timestamps). The contenders run
interleaved, cell by cell, round after round, so load that comes and goes touches
them alike; the figures are medians, their ratios to the no-op cell's, and the paired
ratio (per round, then the median over rounds; see ``measure``).

    python benchmarks/bench_cell.py                 # ~1-2 minutes
    python benchmarks/bench_cell.py --rounds 5 --per 5   # a quick look
    python benchmarks/bench_cell.py --profile exec  # cProfile in the kernel (see README)
    python benchmarks/bench_cell.py --host          # terminals in the terminal host
    python benchmarks/bench_cell.py --baseline /tmp/old-tree   # before/after, one run

``--baseline DIR`` starts a second kernel with ``PYTHONPATH=DIR`` (an export of another
commit: ``git archive REV | tar -x -C DIR``); the two kernels take turns round by round,
and each one's ratios are to its own no-op cell.

Issue 34 §5: targets ``%bash_exec --wait true`` <= 1.2x and ``%%bash_exec
--wait`` / ``%%bash`` <= 1.15x the no-op cell (benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from typing import Any

from jupyter_client import KernelManager

CONTENDERS: dict[str, str] = {
    "noop": "pass",
    "exec": "%bash_exec --wait true",
    "cell": "%%bash_exec --wait\ntrue",
    "ipython_bash": "%%bash\ntrue",
    "bang": "!true",
    "value": "1",
    "display": "display('x')",
    # The two halves of a quick --wait cell, apart: the engine's exec of `true` (its
    # value assigned, so nothing is shown), and one display sent the way the magics
    # send a final area (the extension's publisher), with no job.
    "engine": "_r = _dsh_state.magics.registry.exec(_dsh_state.magics.session, 'true', wait_ms=250)",
    "drawn": "_dsh_state.views.publish(data={'text/plain': 'x', 'text/html': '<pre>x</pre>'}, metadata={})",
}
LABELS = {
    "noop": "no-op Python cell (`pass`)",
    "exec": "`%bash_exec --wait true`",
    "cell": "`%%bash_exec --wait` / `true`",
    "ipython_bash": "IPython's `%%bash` / `true`",
    "bang": "`!true`",
    "value": "a cell returning a value (`1`)",
    "display": "a cell displaying a value (`display('x')`)",
    "engine": "the engine's exec(wait_ms) of `true` alone",
    "drawn": "one display the magics' way, alone",
}
SESSION = f"bench-cell-{os.getpid()}"
SETUP = (
    "%load_ext dsh_magics\n"
    f"%config BashMagics.default_session = {SESSION!r}\n"
    "%bash_attach\n"
    "_dsh_state = get_ipython()._dsh_magics_state\n"
)


class Kernel:
    """One python3 ipykernel of this interpreter, driven message by message."""

    def __init__(self, host: bool, pythonpath: str | None = None) -> None:
        self.km = KernelManager(kernel_name="python3")
        spec = self.km.kernel_spec
        assert spec is not None, "no python3 kernel spec"
        spec.argv[0] = sys.executable  # the interpreter under test
        env = dict(os.environ)
        if pythonpath is not None:
            env["PYTHONPATH"] = pythonpath
        env.pop("JPY_SESSION_NAME", None)
        env["DSH_MAGICS_HOST"] = "1" if host else "0"
        # A host of its own, stopped and removed at the end (never a shared one).
        self.host_dir = tempfile.mkdtemp(prefix="bench-cell-host-") if host else None
        if self.host_dir:
            env["DSH_MAGICS_HOST_DIR"] = self.host_dir
        self.env = env
        # The kernel's working directory comes first on its sys.path (ipykernel
        # puts '' there), ahead of PYTHONPATH: started in this checkout, a
        # baseline kernel would import this tree's package. So each kernel starts
        # in its own tree and says which package it loaded.
        tree = pythonpath or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        self.km.start_kernel(env=env, cwd=tree)
        self.kc = self.km.client()
        self.kc.start_channels()
        self.kc.wait_for_ready(timeout=120)
        loaded = self.run("import dsh_magics; print(dsh_magics.__file__)")["text"].strip()
        if not os.path.realpath(loaded).startswith(os.path.realpath(tree) + os.sep):
            self.close()
            raise SystemExit(f"bench_cell: the kernel for {tree} imported {loaded}")

    def run(self, code: str, timeout: float = 120) -> dict[str, Any]:
        """Run a cell; returns its client time, kernel time, message counts and status."""
        t0 = time.perf_counter()
        msg_id = self.kc.execute(code, store_history=False, allow_stdin=False)
        deadline = time.monotonic() + timeout
        types: Counter[str] = Counter()
        busy: dt.datetime | None = None
        text: list[str] = []
        while True:
            try:
                msg = self.kc.get_iopub_msg(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise RuntimeError(f"no idle within {timeout}s for {code!r}") from None
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            kind = msg["msg_type"]
            types[kind] += 1
            if kind == "stream":
                text.append(msg["content"]["text"])
            elif kind == "error":
                text.append(f"{msg['content']['ename']}: {msg['content']['evalue']}")
            if kind == "status":
                state = msg["content"]["execution_state"]
                if state == "busy":
                    busy = msg["header"]["date"]
                elif state == "idle":
                    client_ms = (time.perf_counter() - t0) * 1000
                    kernel_ms = (
                        (msg["header"]["date"] - busy).total_seconds() * 1000 if busy else float("nan")
                    )
                    break
        reply = self.kc.get_shell_msg(timeout=max(0.01, deadline - time.monotonic()))
        while reply["parent_header"].get("msg_id") != msg_id:
            reply = self.kc.get_shell_msg(timeout=max(0.01, deadline - time.monotonic()))
        return {
            "client_ms": client_ms,
            "kernel_ms": kernel_ms,
            "types": dict(types),
            "status": reply["content"]["status"],
            "text": "".join(text),
        }

    def check(self, code: str) -> str:
        r = self.run(code)
        if r["status"] != "ok":
            raise RuntimeError(f"cell failed: {code!r}: {r['text']}")
        return str(r["text"])

    def close(self) -> None:
        try:
            self.run(f"%bash_close --session {SESSION}")
        finally:
            self.kc.stop_channels()
            self.km.shutdown_kernel(now=False)
            if self.host_dir:
                stop = [sys.executable, "-m", "dsh_magics.cli", "host", "stop", "--dir", self.host_dir]
                subprocess.run(stop, check=False, capture_output=True, timeout=60, env=self.env)
                shutil.rmtree(self.host_dir, ignore_errors=True)


def measure(kernels: dict[str, Kernel], names: list[str], rounds: int, per: int) -> dict[str, Any]:
    """Every kernel runs every contender ``per`` times a round, the contenders one cell
    each in turn (the order turning each round), the kernels taking turns round by round:
    load that comes and goes touches all alike. Besides the medians of all cells, the
    *paired* ratio: the median over rounds of (the round's median of a contender / the
    same round's median of the no-op cell), which a slow drift of the load cancels out of."""
    samples: dict[tuple[str, str], dict[str, list[float]]] = {
        (t, n): {"client": [], "kernel": []} for t in kernels for n in names
    }
    by_round: dict[tuple[str, str], dict[str, list[float]]] = {
        (t, n): {"client": [], "kernel": []} for t in kernels for n in names
    }
    types: dict[tuple[str, str], dict[str, int]] = {}
    trees = list(kernels)
    for i in range(rounds):
        for tree in trees[i % len(trees) :] + trees[: i % len(trees)]:
            order = names[i % len(names) :] + names[: i % len(names)]
            got: dict[str, dict[str, list[float]]] = {n: {"client": [], "kernel": []} for n in names}
            for _ in range(per):
                for name in order:
                    r = kernels[tree].run(CONTENDERS[name])
                    if r["status"] != "ok":
                        raise RuntimeError(f"{tree}: {name} failed: {r['text']}")
                    for side in ("client", "kernel"):
                        samples[(tree, name)][side].append(r[f"{side}_ms"])
                        got[name][side].append(r[f"{side}_ms"])
                    types[(tree, name)] = r["types"]
            for name in names:
                for side in ("client", "kernel"):
                    by_round[(tree, name)][side].append(
                        statistics.median(got[name][side]) / statistics.median(got["noop"][side])
                    )
    out: dict[str, Any] = {}
    for tree in trees:
        base = {side: statistics.median(samples[(tree, "noop")][side]) for side in ("client", "kernel")}
        rows: dict[str, Any] = {}
        for name in names:
            row: dict[str, Any] = {"messages": types[(tree, name)], "n": len(samples[(tree, name)]["client"])}
            for side in ("client", "kernel"):
                med = statistics.median(samples[(tree, name)][side])
                row[f"{side}_median_ms"] = round(med, 3)
                row[f"{side}_ratio"] = round(med / base[side], 3)
                row[f"{side}_paired_ratio"] = round(statistics.median(by_round[(tree, name)][side]), 3)
            rows[name] = row
        out[tree] = rows
    return out


PROFILE_CELL = """
import cProfile, io, pstats
_ip = get_ipython()
_prof = cProfile.Profile()
for _ in range({warm}):
    _ip.run_cell({code!r}, store_history=False)
_prof.enable()
for _ in range({n}):
    _ip.run_cell({code!r}, store_history=False)
_prof.disable()
_out = io.StringIO()
_st = pstats.Stats(_prof, stream=_out)
_st.sort_stats({sort!r}).print_stats({top})
print(_out.getvalue())
"""


def profile(k: Kernel, name: str, n: int, sort: str, top: int) -> str:
    """cProfile around ``n`` nested ``run_cell`` of the contender inside the
    kernel: the magic, its display and what it publishes on iopub, not the
    kernel's own message loop (that part is the no-op cell's cost too)."""
    code = PROFILE_CELL.format(warm=5, n=n, code=CONTENDERS[name], sort=sort, top=top)
    return k.check(code)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rounds", type=int, default=20, help="interleaved rounds (default 20)")
    ap.add_argument("--per", type=int, default=10, help="cells per contender per round (default 10)")
    ap.add_argument("--only", nargs="*", choices=sorted(CONTENDERS), default=None)
    ap.add_argument("--host", action="store_true", help="terminals in the terminal host")
    ap.add_argument("--profile", choices=sorted(CONTENDERS), default=None)
    ap.add_argument("--profile-n", type=int, default=300)
    ap.add_argument("--sort", default="tottime", help="pstats sort key (default tottime)")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    ap.add_argument(
        "--baseline", metavar="DIR", default=None,
        help="a second kernel with PYTHONPATH=DIR (another tree), taking turns with this one",
    )
    args = ap.parse_args(argv)
    kernels: dict[str, Kernel] = {}
    try:
        kernels["this tree"] = Kernel(host=args.host)
        if args.baseline and not args.profile:
            kernels[f"baseline {args.baseline}"] = Kernel(host=args.host, pythonpath=args.baseline)
        for k in kernels.values():
            k.check(SETUP)
            for name in CONTENDERS:  # warm every path once (imports, first job)
                for _ in range(3):
                    k.run(CONTENDERS[name])
        if args.profile:
            print(profile(kernels["this tree"], args.profile, args.profile_n, args.sort, args.top))
            return 0
        names = ["noop"] + [n for n in (args.only or CONTENDERS) if n != "noop"]
        load = os.getloadavg()
        res = measure(kernels, names, args.rounds, args.per)
        res_meta = {
            "load_before": [round(x, 2) for x in load],
            "load_after": [round(x, 2) for x in os.getloadavg()],
            "host": args.host,
        }
    finally:
        for k in kernels.values():
            k.close()
    if args.json:
        print(json.dumps({"meta": res_meta, "cells": res}, indent=2))
        return 0
    print(f"load {res_meta['load_before']} -> {res_meta['load_after']}, host={args.host}")
    for tree, rows in res.items():
        print(f"\n{tree}")
        print(f"{'cell':44} {'client ms':>10} {'ratio':>6} {'paired':>6} {'kernel ms':>10} {'ratio':>6} {'paired':>6}  iopub")
        for name, row in rows.items():
            msgs = ", ".join(f"{t} {c}" for t, c in sorted(row["messages"].items()))
            print(
                f"{LABELS[name]:44} {row['client_median_ms']:>10.2f} {row['client_ratio']:>6.2f} "
                f"{row['client_paired_ratio']:>6.2f} {row['kernel_median_ms']:>10.2f} {row['kernel_ratio']:>6.2f} "
                f"{row['kernel_paired_ratio']:>6.2f}  {msgs}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
