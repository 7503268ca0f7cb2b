"""Run chosen tests N times under CPU load and count the outcomes, so that a
flaky test is caught before it lands (docs/testing.md, "Flaky tests").

    PYTHONPATH=$PWD python tests/rerun.py -n 40 tests/x/test_y.py::test_z [more ids] [-- pytest args]

Load: ``--hogs`` busy-looping processes (default 2: on the 2-core test
machines both cores are then contended, as in a loaded CI run), started
before the first run and ended after the last. By default every selected
test runs ``-n`` times in one pytest process (function fixtures set up anew
each time; module and session fixtures, such as the test sshd, shared);
``--fresh`` starts a new pytest process per run instead, for failures that
need a fresh interpreter. Prints one line per test: runs, passed, failed,
skipped, and the first lines of each distinct failure. Exit status 0 only
when nothing failed.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections import Counter, defaultdict
from typing import Any

# Run as a script, Python puts tests/ first on the path, where tests/mcp/
# would shadow the MCP SDK's ``mcp`` for the tests collected in this process.
if sys.path and os.path.abspath(sys.path[0] or ".") == os.path.dirname(os.path.abspath(__file__)):
    del sys.path[0]

import pytest  # noqa: E402 - after the path fix above


def _test_of(nodeid: str) -> str:
    """The test a run belongs to: its node id without the run's id."""
    nodeid = re.sub(r"\[rerun\d+\]$", "", nodeid)
    nodeid = re.sub(r"\[rerun\d+-", "[", nodeid)
    return re.sub(r"-rerun\d+(?=[\]-])", "", nodeid)


class Repeat:
    """A pytest plugin: each collected test is parametrized ``runs`` times
    (ids ``rerun1``..); a run fails when any of its phases does. Outcomes
    are counted per test, the run ids taken out."""

    def __init__(self, runs: int, until_fail: bool, wanted: set[str] | None = None, log: str | None = None) -> None:
        self.runs = runs
        self.log = log  # where each failed run's whole report goes
        self.until_fail = until_fail
        self.wanted = wanted or set()  # parametrized ids asked for (their runs get other ids)
        self.outcomes: dict[str, Counter[str]] = defaultdict(Counter)
        self.failures: dict[str, list[str]] = defaultdict(list)
        self._current: dict[str, str] = {}

    @pytest.fixture
    def rerun_index(self, request: pytest.FixtureRequest) -> int:
        return int(request.param)

    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> None:
        metafunc.fixturenames.append("rerun_index")
        metafunc.parametrize("rerun_index", range(1, self.runs + 1), indirect=True, ids=lambda i: f"rerun{i}")

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if not self.wanted:
            return
        def key(nodeid: str) -> str:  # node ids are relative to the rootdir; the ids given may not be
            return nodeid.rsplit("/", 1)[-1]

        wanted = {key(w) for w in self.wanted}
        bases = {w.split("[", 1)[0] for w in wanted}
        kept = [
            i for i in items if key(_test_of(i.nodeid)) in wanted or key(i.nodeid).split("[", 1)[0] not in bases
        ]
        config.hook.pytest_deselected(items=[i for i in items if i not in kept])
        items[:] = kept

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        node = report.nodeid
        if report.failed:
            self._current[node] = "failed"
            test = _test_of(node)
            run = re.search(r"rerun(\d+)", node)
            self.failures[test].append(f"run {run.group(1) if run else '?'} ({report.when}): {_first_lines(report.longreprtext)}")
            if self.log is not None:
                with open(self.log, "a", encoding="utf-8") as f:
                    f.write(f"==== {node} ({report.when})\n{report.longreprtext}\n")
        elif report.skipped and self._current.get(node) != "failed":
            self._current[node] = "skipped"
        else:
            self._current.setdefault(node, "passed")
        if report.when == "teardown":
            self.outcomes[_test_of(node)][self._current.pop(node)] += 1

    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> None:
        if self.until_fail and call.excinfo is not None and call.when == "call":
            item.session.shouldstop = "a run failed (--until-fail)"


def _first_lines(text: str, n: int = 3) -> str:
    lines = [ln for ln in text.splitlines() if ln.strip().startswith("E ")] or text.splitlines()[-n:]
    return " | ".join(ln.strip() for ln in lines[:n])


def start_hogs(count: int) -> list[subprocess.Popen[bytes]]:
    """``count`` processes that keep a core busy until ended."""
    return [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]


def stop_hogs(hogs: list[subprocess.Popen[bytes]]) -> None:
    for h in hogs:
        h.kill()
    for h in hogs:
        h.wait()


def _fresh(ids: list[str], runs: int, extra: list[str], until_fail: bool) -> dict[str, Any]:
    """Each run a new pytest process; outcomes by its exit status."""
    counts: Counter[str] = Counter()
    failures: list[str] = []
    for i in range(runs):
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, *ids],
            capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode == 0:
            counts["passed"] += 1
        elif done.returncode == 5:  # nothing collected / all deselected
            counts["skipped"] += 1
        else:
            counts["failed"] += 1
            failures.append(f"run {i + 1}: {_first_lines(done.stdout)}")
            if until_fail:
                break
    return {" ".join(ids): (counts, failures)}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra: list[str] = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1 :]
    ap = argparse.ArgumentParser(prog="tests/rerun.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("ids", nargs="+", help="test ids (file, file::test, file::test[param])")
    ap.add_argument("-n", "--runs", type=int, default=20, help="runs per test (default 20)")
    ap.add_argument("--hogs", type=int, default=2, help="CPU-bound processes running meanwhile (default 2)")
    ap.add_argument("--fresh", action="store_true", help="a new pytest process per run")
    ap.add_argument("--until-fail", action="store_true", help="stop a test's runs at its first failure")
    ap.add_argument("--log", help="append the whole report of each failed run to this file (in-process runs)")
    args = ap.parse_args(argv)
    if args.runs < 1 or args.hogs < 0:
        ap.error("--runs must be >= 1 and --hogs >= 0")
    hogs = start_hogs(args.hogs)
    started = time.monotonic()
    try:
        if args.fresh:
            results = _fresh(args.ids, args.runs, extra, args.until_fail)
        else:
            # `file::test[param]` is collected as `file::test` and picked after
            # the runs' ids are added
            wanted = {i for i in args.ids if "[" in i}
            paths = list(dict.fromkeys(i.split("[", 1)[0] for i in args.ids))
            plugin = Repeat(args.runs, args.until_fail, wanted, args.log)
            pytest.main(["-q", "-p", "no:cacheprovider", *extra, *paths], plugins=[plugin])
            results = {k: (plugin.outcomes[k], plugin.failures[k]) for k in plugin.outcomes}
    finally:
        stop_hogs(hogs)
    took = time.monotonic() - started
    print(f"\n== rerun: {args.runs} runs per test, {args.hogs} CPU hogs, {took:.0f}s ==")
    failed = 0
    for test, (counts, failures) in results.items():
        runs = sum(counts.values())
        failed += counts["failed"]
        print(f"{test}: {runs} runs, {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
        for line in dict.fromkeys(failures):
            print(f"    {line[:400]}")
    if not results:
        print("no test ran")
        return 2
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
