"""Where the published packages live and how they get there: the cache, node/npm checks, npm install.

Nothing here runs the bridge; :class:`~dsh_magics.harness.bridge.Bridge` calls it before booting.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable
from pathlib import Path

from ...errors import BridgeUnavailable
from ..facts import KNOWN_PUBLISHED_VERSIONS, TOOL_PACKAGES
from .install_plan import InstallPlan

CACHE_ENV = "DSH_MAGICS_CACHE_DIR"
INSTALL_TIMEOUT_S = 600.0
MIN_NODE_MAJOR = 18

Progress = Callable[[str], None]


def stderr_progress(line: str) -> None:
    """The default progress sink: one prefixed line on stderr."""
    print(f"[dsh-magics] {line}", file=sys.stderr, flush=True)


def cache_root() -> Path:
    """Root of our per-user cache (``$DSH_MAGICS_CACHE_DIR`` wins)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dsh-magics"


def install_dir(version: str) -> Path:
    """Where ``version``'s packages live: ``<cache>/npm/<version>``."""
    return cache_root() / "npm" / version


def find_tool(tool: str) -> str:
    """The path of ``node`` or ``npm``; :class:`BridgeUnavailable` says what is missing."""
    path = shutil.which(tool)
    if path is None:
        raise BridgeUnavailable(
            f"{tool} was not found on PATH; the live bridge needs Node.js >= {MIN_NODE_MAJOR} "
            "and npm (the offline model still works)",
            missing=tool,
        )
    return path


def check_node(node: str) -> None:
    """Refuse a ``node`` older than :data:`MIN_NODE_MAJOR` before npm installs for it."""
    try:
        out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        raise BridgeUnavailable(f"cannot run node: {exc}") from exc
    m = re.match(r"v(\d+)", out.strip())
    if not m or int(m.group(1)) < MIN_NODE_MAJOR:
        raise BridgeUnavailable(f"node {out.strip() or '?'} is too old; need >= {MIN_NODE_MAJOR}")


_versions_lock = threading.Lock()
_versions_cache: tuple[str, ...] | None = None


def published_versions() -> tuple[str, ...]:
    """Published versions of ``@deepseek-ai/dsh-tool-bash`` (one ``npm view``).

    Falls back to the versions we know of when npm or the registry is not
    reachable, so the answer is always usable for choices in a UI.
    """
    global _versions_cache
    with _versions_lock:
        if _versions_cache is not None:
            return _versions_cache
        npm = shutil.which("npm")
        found: tuple[str, ...] = ()
        if npm:
            try:
                proc = subprocess.run(
                    [npm, "view", TOOL_PACKAGES[0], "versions", "--json"],
                    capture_output=True,
                    text=True,
                    timeout=60,
                )
                if proc.returncode == 0:
                    data = json.loads(proc.stdout)
                    found = tuple([data] if isinstance(data, str) else data)
            except (OSError, subprocess.SubprocessError, ValueError):
                found = ()
        _versions_cache = found or KNOWN_PUBLISHED_VERSIONS
        return _versions_cache


def classify_npm_failure(output: str) -> str:
    """One reason a person can act on, from npm's output."""
    if re.search(r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET|network", output):
        return "the npm registry is not reachable"
    if re.search(r"E404|ETARGET|No matching version", output):
        return "a requested package version is not published"
    return "npm install failed"


def installed_version(prefix: Path) -> str | None:
    """The dsh-tool-bash version installed under ``prefix``, or None."""
    pkg = prefix / "node_modules" / "@deepseek-ai" / "dsh-tool-bash" / "package.json"
    try:
        return json.loads(pkg.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def is_installed(prefix: Path, version: str, plan: InstallPlan) -> bool:
    """``plan``'s pinned packages (and stand-ins) for ``version`` are in place under ``prefix``."""
    try:
        recorded = json.loads((prefix / "installed.json").read_text())
    except (OSError, ValueError):
        return False
    wanted = plan.record()
    return (
        installed_version(prefix) == version
        and recorded.get("packages") == wanted["packages"]
        and recorded.get("standins", []) == wanted["standins"]
    )


def install(prefix: Path, version: str, plan: InstallPlan, progress: Progress) -> None:
    """Install ``plan`` into ``prefix`` (no-op when present).

    Installs into a temporary sibling directory and renames it into place,
    so an interrupted or concurrent install never leaves a half tree.
    """
    if is_installed(prefix, version, plan):
        return
    node = find_tool("node")
    npm = find_tool("npm")
    check_node(node)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    tmp = prefix.parent / f".{prefix.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    tmp.mkdir()
    try:
        (tmp / "package.json").write_text(
            json.dumps({"name": "dsh-magics-bridge", "private": True, "type": "module"}) + "\n"
        )
        for standin in plan.standins:
            standin.write(tmp)
        progress(f"installing {len(plan.specs)} npm packages @{version} into {prefix}")
        for s in plan.specs:
            progress(f"  {s}")
        for standin in plan.standins:
            progress(
                f"  {standin.package}: stand-in re-exporting {', '.join(standin.names)} "
                f"from {standin.source}"
            )
        output = _run_npm(
            [
                npm,
                "install",
                "--no-audit",
                "--no-fund",
                "--ignore-scripts",
                "--loglevel=http",
                *plan.npm_args(),
            ],
            cwd=tmp,
            progress=progress,
        )
        got = installed_version(tmp)
        if got != version:
            raise BridgeUnavailable(
                f"npm install finished but dsh-tool-bash is {got!r}, not {version!r}",
                output=output[-2000:],
            )
        (tmp / "installed.json").write_text(
            json.dumps({"version": version, **plan.record(), "at": time.time()}) + "\n"
        )
        try:
            tmp.rename(prefix)
        except OSError:
            # Someone else won the race only if theirs is good (not an older plan's tree:
            # tests/harness/test_bridge_failures.py::test_a_tree_from_another_plan_is_not_installed
            # pins that check; the race itself has no test).
            if not is_installed(prefix, version, plan):
                shutil.rmtree(prefix, ignore_errors=True)
                tmp.rename(prefix)
        progress(f"installed {version}")
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _run_npm(argv: list[str], *, cwd: Path, progress: Progress) -> str:
    """Run npm, relaying its progress lines and a heartbeat, return its output."""
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
    except OSError as exc:
        raise BridgeUnavailable(f"cannot run npm: {exc}") from exc
    lines: list[str] = []
    done = threading.Event()

    def heartbeat() -> None:
        while not done.wait(5.0):
            progress(f"  ... still installing ({time.monotonic() - start:.0f}s)")

    hb = threading.Thread(target=heartbeat, name="dsh-npm-heartbeat", daemon=True)
    hb.start()
    fetched = 0
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            line = raw.rstrip()
            lines.append(line)
            fetch = re.search(r"http fetch GET (\d+) (\S+)", line)
            if fetch:
                fetched += 1
                what = urllib.parse.unquote(
                    fetch.group(2).rsplit("/-/", 1)[-1].split("registry.npmjs.org/")[-1]
                )
                verb = "downloaded" if what.endswith(".tgz") else "resolved"
                progress(f"  [{fetched}] {verb} {what.removesuffix('.tgz')}")
            elif line.startswith(("added ", "changed ", "up to date")) or "ERR" in line:
                progress(f"  npm: {line}")
        try:
            proc.wait(timeout=INSTALL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise BridgeUnavailable("npm install timed out") from None
    finally:
        done.set()
        hb.join()
    output = "\n".join(lines)
    if proc.returncode != 0:
        reason = classify_npm_failure(output)
        tail = "\n".join(lines[-8:])
        raise BridgeUnavailable(
            f"{reason} (npm exit {proc.returncode}):\n{tail}", output=output[-4000:]
        )
    progress(f"  npm finished in {time.monotonic() - start:.1f}s")
    return output
