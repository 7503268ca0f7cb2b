"""Inspector benchmark: what one control switch costs, model and live (warm).

    python benchmarks/bench_inspector.py [--rounds N] [--json]

A "switch" is what a click does: the view-model update, every pane's HTML,
and the assignments to the ipywidgets (a real widget tree on ipywidgets'
dummy comm, so serialisation is included but no frontend).  Reported:

- median and p95 milliseconds per switch, for the model and for live once warm;
- the ratio of the median to the issue's budget (50 ms model, 100 ms live);
- the ratio to a floor measured in the same run: one bare ``harness.schema()``
  model call, i.e. the least any re-render must do;
- how long ``inspect(source="live")`` takes to return while the bridge boots,
  against the boot itself (the first must be a small fraction: never block).

Nothing is asserted; numbers differ by machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

from dsh_magics import harness
from dsh_magics.widgets.inspector import Inspector, inspect
from dsh_magics.widgets.inspector_backend import HarnessBackend
from dsh_magics.widgets.inspector_state import InspectorState

SWITCHES: list[dict[str, Any]] = [
    {"background": False},
    {"sandbox": "read-only"},
    {"background": True},
    {"sandbox": "danger-full-access"},
    {"preset": "dsh-base"},
    {"baseline": "no-background"},
    {"sandbox": None},
    {"baseline": "catalog-default"},
    {"preset": "catalog-default"},
]
ESCALATIONS: list[dict[str, Any]] = [
    {"mode": "danger-full-access"},
    {"mode": "read-only", "policy": "never"},
    {"policy": "ask", "outcome": "rejected"},
    {"outcome": "allowed-once"},
]


def _ms(samples: list[float]) -> dict[str, float]:
    s = sorted(samples)
    return {
        "median_ms": statistics.median(s) * 1000,
        "p95_ms": s[min(len(s) - 1, int(len(s) * 0.95))] * 1000,
    }


def _switches(insp: Inspector, rounds: int) -> list[float]:
    out = []
    for _ in range(rounds):
        for change in SWITCHES:
            t0 = time.perf_counter()
            insp.set(**change)
            out.append(time.perf_counter() - t0)
        for change in ESCALATIONS:
            t0 = time.perf_counter()
            insp.escalate(**change)
            out.append(time.perf_counter() - t0)
    return out


def _floor(rounds: int) -> list[float]:
    out = []
    configs = [
        harness.Config(background=bg, sandbox=sb)
        for bg in (True, False)
        for sb in (None, "read-only")
    ]
    for _ in range(rounds):
        for cfg in configs:
            t0 = time.perf_counter()
            harness.schema(cfg)
            out.append(time.perf_counter() - t0)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=20)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    result: dict[str, Any] = {}

    floor = _ms(_floor(args.rounds))
    result["floor_schema_call"] = floor

    model = Inspector(InspectorState(HarnessBackend(live=False), source="model"))
    assert model.widget is not None
    _switches(model, 1)  # warm the caches, as a user's first clicks do
    m = _ms(_switches(model, args.rounds))
    m["budget_ratio"] = m["median_ms"] / 50.0
    m["floor_ratio"] = m["median_ms"] / floor["median_ms"]
    result["model_switch"] = m

    # Live: how long inspect() takes to return while the bridge boots, then warm switches.
    bridge = harness.get_bridge()
    bridge.close()
    t0 = time.perf_counter()
    live = inspect(source="live")
    returned = time.perf_counter() - t0
    assert live.widget is not None
    t1 = time.perf_counter()
    status = live.wait_for_live(600)
    booted = time.perf_counter() - t0
    if status is None or status.state != "ready":
        result["live"] = {"unavailable": status.message if status else "disabled"}
    else:
        result["live_boot"] = {
            "inspect_returned_ms": returned * 1000,
            "bridge_ready_ms": booted * 1000,
            "returned_to_ready_ratio": returned / booted,
            "waited_ms": (time.perf_counter() - t1) * 1000,
        }
        _switches(live, 1)  # warm: every config and escalation once through the bridge
        lv = _ms(_switches(live, args.rounds))
        lv["budget_ratio"] = lv["median_ms"] / 100.0
        lv["floor_ratio"] = lv["median_ms"] / floor["median_ms"]
        lv["vs_model_ratio"] = lv["median_ms"] / m["median_ms"]
        result["live_switch"] = lv

    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"floor: one model schema() call      median {floor['median_ms']:.2f} ms")
    print(
        f"model switch (budget 50 ms)        median {m['median_ms']:.2f} ms  p95 {m['p95_ms']:.2f} ms  "
        f"= {m['budget_ratio']:.2f} × budget, {m['floor_ratio']:.1f} × floor"
    )
    if "live_switch" in result:
        b, lv = result["live_boot"], result["live_switch"]
        print(
            f"live switch, warm (budget 100 ms) median {lv['median_ms']:.2f} ms  p95 {lv['p95_ms']:.2f} ms  "
            f"= {lv['budget_ratio']:.2f} × budget, {lv['vs_model_ratio']:.2f} × model"
        )
        print(
            f"inspect(source='live') returned in {b['inspect_returned_ms']:.1f} ms; bridge ready after "
            f"{b['bridge_ready_ms']:.1f} ms (ratio {b['returned_to_ready_ratio']:.2f})"
        )
    else:
        print(f"live: unavailable ({result['live']['unavailable']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
