"""What finding the bells in output costs (host/bells.py), against a plain
``bytes.find`` of BEL over the same bytes, in the same run.

    python benchmarks/bench_bells.py [--quick] [--baseline DIR] [--json]

host/stream.py ``_rings`` looks at what a screen replaces (up to
``MAX_BEHIND``, 4 MiB, queued for a slow viewer) under the terminal's lock,
and attach/client.py looks at every piece of a window drawn from screens on
its event thread. Per shape of 4 MiB queue (ANSI-coloured ``ls``-like lines,
plain lines, a flood of titles, a title per line; a prompt's title at the end, a real bell at the end, no BEL at
all): milliseconds of ``_rings`` and of ``Bells().rings`` (the client's,
which also finds the end state), best of several rounds, their ratio to
``bytes.find``, and thread CPU time. ``--baseline DIR`` times the same calls
from another tree's ``dsh_magics`` (``git archive <commit> dsh_magics | tar
-x -C DIR``), alternating with this tree's in each round.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from dsh_magics.host import bells, stream  # noqa: E402

SIZE = 4 * 1024 * 1024
COLOURED = b"\x1b[01;34mdir\x1b[0m  \x1b[01;32mfile.py\x1b[0m  plain text here\r\n"
PLAIN = b"12345 plain output of a build step\r\n"
#: A flood of titles (``yes $'\\e]0;t\\a'``: every BEL ends a string) and a title per line (a progress bar's).
TITLES = b"\x1b]0;t\x07"
PROGRESS = b"\x1b]0;50% done\x07\x1b[32mstep 50 of 100\x1b[0m\r\n"
ENDS = {"title": b"\x1b]0;user@host: ~\x07$ ", "bell": b"done\x07\r\n", "none": b"$ "}


def _load(tree: Path, name: str) -> ModuleType:
    """``dsh_magics.host.<name>`` of another tree, under a name of its own."""
    path = tree / "dsh_magics" / "host" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"baseline_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _queue(line: bytes, end: bytes) -> list[bytes | dict[str, Any]]:
    """4 MiB as the reader's pieces (4 KiB each) with ``end`` last."""
    data = line * (SIZE // len(line)) + end
    return [data[i : i + 4096] for i in range(0, len(data), 4096)]


def _best(fn: Callable[[], Any], rounds: int) -> tuple[float, float]:
    """Best wall and thread-CPU milliseconds of ``fn`` over ``rounds``."""
    wall = cpu = float("inf")
    for _ in range(rounds):
        c, t = time.thread_time_ns(), time.perf_counter()
        fn()
        wall = min(wall, (time.perf_counter() - t) * 1e3)
        cpu = min(cpu, (time.thread_time_ns() - c) / 1e6)
    return wall, cpu


def measure(quick: bool = False, baseline: Path | None = None) -> dict[str, Any]:
    rounds = 3 if quick else 9
    trees: dict[str, tuple[Callable[..., bool], Callable[[bytes], Any]]] = {
        "this": (stream._rings, lambda data: bells.Bells().rings(data))
    }
    if baseline is not None:
        old_bells = _load(baseline, "bells")
        if hasattr(old_bells.Bells, "feed"):  # (e61e24d's parser counted bells)
            trees["baseline"] = (
                lambda queue, held, piece: (
                    any(b"\x07" in p for p in queue)
                    and old_bells.Bells().feed(b"".join(p for p in queue if type(p) is bytes)) > 0
                ),
                lambda data: old_bells.Bells().feed(data),
            )
        else:  # (host/stream.py ``_rings`` as it calls ``rings``: the module needs its package)
            trees["baseline"] = (
                lambda queue, held, piece: (
                    any(b"\x07" in p for p in queue if type(p) is bytes)
                    and old_bells.rings(b"".join(p for p in queue if type(p) is bytes))
                ),
                lambda data: old_bells.Bells().rings(data),
            )
    out: dict[str, Any] = {"rounds": rounds, "queue_bytes": SIZE, "shapes": {}}
    for lines_name, line in (("coloured", COLOURED), ("plain", PLAIN), ("titles", TITLES), ("progress", PROGRESS)):
        for end_name, end in ENDS.items():
            queue = _queue(line, end)
            joined = b"".join(p for p in queue if type(p) is bytes)
            row: dict[str, Any] = {}
            find_ms = _best(partial(joined.find, b"\x07"), rounds)[0]
            row["find_ms"] = round(find_ms, 3)
            for _ in range(rounds):  # alternate the trees round by round
                for name, (rings_fn, client_fn) in trees.items():
                    calls = (
                        ("rings", partial(rings_fn, queue, None, None)),
                        ("client", partial(client_fn, joined)),
                    )
                    for what, fn in calls:
                        wall, cpu = _best(fn, 1)
                        key = f"{name}_{what}"
                        best = row.get(key, (float("inf"), float("inf")))
                        row[key] = (min(best[0], wall), min(best[1], cpu))
            for key in [k for k in row if k != "find_ms"]:
                wall, cpu = row[key]
                row[key] = {
                    "ms": round(wall, 3),
                    "cpu_ms": round(cpu, 3),
                    "x_find": round(wall / max(find_ms, 1e-6), 1),
                }
            out["shapes"][f"{lines_name}, {end_name} at the end"] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument(
        "--baseline", type=Path, help="another tree with dsh_magics/ (git archive of a commit)"
    )
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    result = measure(args.quick, args.baseline)
    if args.json:
        print(json.dumps(result, indent=1))
        return
    print(f"4 MiB queue, best of {result['rounds']} rounds (ms; x = over bytes.find)")
    for shape, row in result["shapes"].items():
        cells = [f"find {row['find_ms']:.2f}"]
        cells += [
            f"{k} {v['ms']:.2f} (cpu {v['cpu_ms']:.2f}, x{v['x_find']})"
            for k, v in row.items()
            if k != "find_ms"
        ]
        print(f"{shape:28} " + " | ".join(cells))


if __name__ == "__main__":
    main()
