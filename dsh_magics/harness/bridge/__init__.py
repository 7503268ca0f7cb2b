"""The live bridge: a persistent Node process running the real published packages.

Only the harness's own code gives its exact texts, which we must not store (docs/inspector.md).

May import: the rest of harness/, errors, shutdown. Must not import: terminal/,
host/ or any adapter.
"""

from __future__ import annotations

import collections
import concurrent.futures
import json
import os
import queue
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
from typing import Any

from ... import shutdown
from ...errors import BridgeUnavailable, InvalidArgument
from ..facts import DEFAULT_VERSION, KNOWN_PUBLISHED_VERSIONS, TOOL_PACKAGES
from ..types import Config, EscalationRequest, LiveStatus
from .install_plan import InstallPlan, plan_for

CACHE_ENV = "DSH_MAGICS_CACHE_DIR"
NODE_PROGRAM = Path(__file__).resolve().parent.parent / "node" / "bridge.mjs"
INSTALL_TIMEOUT_S = 600.0
BOOT_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 30.0
MIN_NODE_MAJOR = 18

Progress = Callable[[str], None]


def _stderr_progress(line: str) -> None:
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


def _which(tool: str) -> str:
    path = shutil.which(tool)
    if path is None:
        raise BridgeUnavailable(
            f"{tool} was not found on PATH; the live bridge needs Node.js >= {MIN_NODE_MAJOR} "
            "and npm (the offline model still works)",
            missing=tool,
        )
    return path


def _check_node(node: str) -> None:
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


def _classify_npm_failure(output: str) -> str:
    if re.search(r"ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET|network", output):
        return "the npm registry is not reachable"
    if re.search(r"E404|ETARGET|No matching version", output):
        return "a requested package version is not published"
    return "npm install failed"


def _installed_version(prefix: Path) -> str | None:
    pkg = prefix / "node_modules" / "@deepseek-ai" / "dsh-tool-bash" / "package.json"
    try:
        return json.loads(pkg.read_text())["version"]
    except (OSError, ValueError, KeyError):
        return None


def _config_payload(config: Config) -> dict[str, Any]:
    return {
        "background": config.background,
        "sandbox": config.sandbox,
        "sandbox_policy": config.sandbox_policy,
    }


class Bridge:
    """A persistent ``node`` process running the real published packages.

    Thread-safe: one request at a time goes over the pipe (the Node side is
    sequential anyway).  ``start()`` blocks; ``start_background()`` does the
    same work on a worker thread and reports through :meth:`on_status`.
    What is installed for a version is its :mod:`.install_plan`; ``node_options``
    are extra ``node`` arguments (tests/harness/test_task_era.py loads a resolve
    hook with them to probe the stand-in).
    """

    def __init__(
        self,
        version: str = DEFAULT_VERSION,
        *,
        cache_dir: Path | None = None,
        progress: Progress | None = None,
        node_options: tuple[str, ...] = (),
    ) -> None:
        self.version = version
        self.prefix = Path(cache_dir) if cache_dir is not None else install_dir(version)
        self._progress = progress or _stderr_progress
        self._lock = threading.RLock()  # guards process lifecycle and the pipe
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr_tail: collections.deque[str] = collections.deque(maxlen=40)
        self._next_id = 0
        self._cache: dict[str, Any] = {}
        self._state: str = "idle"
        self._message = ""
        self._listeners: list[Callable[[LiveStatus], None]] = []
        self._future: concurrent.futures.Future[LiveStatus] | None = None
        self.hello: dict[str, Any] | None = None
        self.plan: InstallPlan = plan_for(version)
        self.node_options: tuple[str, ...] = tuple(node_options)

    # ----------------------------------------------------------------- status
    def status(self) -> LiveStatus:
        """Current state; never blocks on the bridge lock."""
        return LiveStatus(
            state=self._state,  # type: ignore[arg-type]
            version=self.version,
            message=self._message,
            installed=self.is_installed(),
        )

    def on_status(self, callback: Callable[[LiveStatus], None]) -> Callable[[], None]:
        """Call ``callback(status)`` on every state change (from any thread).

        Returns a function that unsubscribes.
        """
        self._listeners.append(callback)

        def unsubscribe() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return unsubscribe

    def _set_state(self, state: str, message: str = "") -> None:
        self._state = state
        self._message = message
        st = self.status()
        for cb in list(self._listeners):
            try:
                cb(st)
            except Exception:  # noqa: BLE001 - a broken listener must not break the bridge
                pass

    # ---------------------------------------------------------------- install
    def is_installed(self) -> bool:
        """The pinned packages (and stand-ins) of this version's plan are in place."""
        try:
            recorded = json.loads((self.prefix / "installed.json").read_text())
        except (OSError, ValueError):
            return False
        plan = self.plan.record()
        return (
            _installed_version(self.prefix) == self.version
            and recorded.get("packages") == plan["packages"]
            and recorded.get("standins", []) == plan["standins"]
        )

    def install(self) -> None:
        """Install the pinned packages into the cache (no-op when present).

        Installs into a temporary sibling directory and renames it into place,
        so an interrupted or concurrent install never leaves a half tree.
        """
        if self.is_installed():
            return
        node = _which("node")
        npm = _which("npm")
        _check_node(node)
        plan = self.plan
        self.prefix.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.prefix.parent / f".{self.prefix.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            (tmp / "package.json").write_text(
                json.dumps({"name": "dsh-magics-bridge", "private": True, "type": "module"}) + "\n"
            )
            for standin in plan.standins:
                standin.write(tmp)
            self._progress(
                f"installing {len(plan.specs)} npm packages @{self.version} into {self.prefix}"
            )
            for s in plan.specs:
                self._progress(f"  {s}")
            for standin in plan.standins:
                self._progress(
                    f"  {standin.package}: stand-in re-exporting {', '.join(standin.names)} "
                    f"from {standin.source}"
                )
            output = self._run_npm(
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
            )
            got = _installed_version(tmp)
            if got != self.version:
                raise BridgeUnavailable(
                    f"npm install finished but dsh-tool-bash is {got!r}, not {self.version!r}",
                    output=output[-2000:],
                )
            (tmp / "installed.json").write_text(
                json.dumps({"version": self.version, **plan.record(), "at": time.time()}) + "\n"
            )
            try:
                tmp.rename(self.prefix)
            except OSError:
                # someone else won the race only if theirs is good (not an older plan's tree)
                if not self.is_installed():
                    shutil.rmtree(self.prefix, ignore_errors=True)
                    tmp.rename(self.prefix)
            self._progress(f"installed {self.version}")
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)

    def _run_npm(self, argv: list[str], *, cwd: Path) -> str:
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
                self._progress(f"  ... still installing ({time.monotonic() - start:.0f}s)")

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
                    self._progress(f"  [{fetched}] {verb} {what.removesuffix('.tgz')}")
                elif line.startswith(("added ", "changed ", "up to date")) or "ERR" in line:
                    self._progress(f"  npm: {line}")
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
            reason = _classify_npm_failure(output)
            tail = "\n".join(lines[-8:])
            raise BridgeUnavailable(
                f"{reason} (npm exit {proc.returncode}):\n{tail}", output=output[-4000:]
            )
        self._progress(f"  npm finished in {time.monotonic() - start:.1f}s")
        return output

    # ------------------------------------------------------------------- boot
    def start(self) -> None:
        """Install if needed and boot the node process; blocks; idempotent.

        Raises :class:`BridgeUnavailable` (and records it in :meth:`status`).
        """
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                return
            try:
                if not self.is_installed():
                    self._set_state("installing", f"installing npm packages @{self.version}")
                    self.install()
                self._set_state("booting", "starting node")
                self._boot()
            except BridgeUnavailable as exc:
                self._set_state("unavailable", exc.message)
                raise
            except Exception as exc:  # an unexpected failure is still "unavailable"
                err = BridgeUnavailable(f"live bridge failed to start: {exc}")
                self._set_state("unavailable", err.message)
                raise err from exc
            self._set_state("ready", f"node {self.hello.get('node') if self.hello else '?'}")

    def _boot(self) -> None:
        node = _which("node")
        program = self.prefix / "bridge.mjs"
        source = NODE_PROGRAM.read_bytes()
        if not program.exists() or program.read_bytes() != source:
            tmp = program.with_suffix(f".tmp-{os.getpid()}")
            tmp.write_bytes(source)
            tmp.replace(program)
        self._lines = queue.Queue()
        self._stderr_tail.clear()
        proc = subprocess.Popen(
            [node, *self.node_options, str(program)],
            cwd=self.prefix,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._proc = proc
        threading.Thread(
            target=self._pump_stdout, args=(proc,), name="dsh-bridge-out", daemon=True
        ).start()
        threading.Thread(
            target=self._pump_stderr, args=(proc,), name="dsh-bridge-err", daemon=True
        ).start()
        first = self._read_line(BOOT_TIMEOUT_S)
        try:
            ready = json.loads(first)["result"]["ready"]
        except (ValueError, KeyError, TypeError):
            ready = False
        if not ready:
            self._kill()
            raise BridgeUnavailable(f"node bridge did not start: {first!r}")
        self.hello = self._call("hello")
        # Warm the JIT on the default configuration (and cache it), so the
        # first request a user makes is as fast as the following ones.
        self._cache[self._key("schemas", config=_config_payload(Config()))] = self._call(
            "schemas", config=_config_payload(Config())
        )

    def _pump_stdout(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self._lines.put(line)
        self._lines.put(None)

    def _pump_stderr(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            self._stderr_tail.append(line.rstrip())

    def _read_line(self, timeout: float) -> str:
        try:
            line = self._lines.get(timeout=timeout)
        except queue.Empty:
            self._kill()
            raise BridgeUnavailable(f"node bridge did not answer within {timeout:.0f}s") from None
        if line is None:
            proc = self._proc
            code = proc.wait() if proc is not None else None
            self._proc = None
            tail = "\n".join(list(self._stderr_tail)[-12:])
            raise BridgeUnavailable(f"node bridge exited (status {code}):\n{tail}")
        return line

    def start_background(self) -> concurrent.futures.Future[LiveStatus]:
        """Do :meth:`start` on a daemon thread; the future resolves to the final
        :class:`LiveStatus` (``ready`` or ``unavailable``) and never raises."""
        with self._lock:
            if self._future is not None and not self._future.done():
                return self._future
            fut: concurrent.futures.Future[LiveStatus] = concurrent.futures.Future()
            if self._proc is not None and self._proc.poll() is None:
                fut.set_result(self.status())
                return fut
            self._future = fut

        def run() -> None:
            try:
                self.start()
            except BridgeUnavailable:
                pass
            except Exception as exc:  # noqa: BLE001 - the future must always resolve
                self._set_state("unavailable", str(exc))
            fut.set_result(self.status())

        threading.Thread(target=run, name="dsh-bridge-start", daemon=True).start()
        return fut

    # ------------------------------------------------------------------ calls
    def _call(self, op: str, **payload: Any) -> Any:
        with self._lock:
            proc = self._proc
            if proc is None or proc.poll() is not None or proc.stdin is None:
                raise BridgeUnavailable("node bridge is not running")
            self._next_id += 1
            req_id = self._next_id
            try:
                proc.stdin.write(json.dumps({"id": req_id, "op": op, **payload}) + "\n")
                proc.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                self._kill()
                self._set_state("unavailable", f"node bridge pipe closed: {exc}")
                raise BridgeUnavailable(f"node bridge pipe closed: {exc}") from exc
            try:
                line = self._read_line(CALL_TIMEOUT_S)
            except BridgeUnavailable as exc:
                self._set_state("unavailable", exc.message)
                raise
            reply = json.loads(line)
            if reply.get("id") != req_id:
                raise BridgeUnavailable(
                    f"node bridge protocol error: reply {reply.get('id')} for {req_id}"
                )
            if not reply.get("ok"):
                err = reply.get("error") or {}
                raise BridgeUnavailable(
                    f"node bridge error ({err.get('kind')}): {err.get('message')}"
                )
            return reply["result"]

    @staticmethod
    def _key(op: str, **payload: Any) -> str:
        return json.dumps([op, payload], sort_keys=True)

    def _cached(self, op: str, **payload: Any) -> Any:
        key = self._key(op, **payload)
        if key in self._cache:
            return self._cache[key]
        self.start()
        result = self._call(op, **payload)
        self._cache[key] = result
        return result

    def schemas(self, config: Config) -> dict[str, Any]:
        """Raw ``{tools: [...], related: [...]}`` or ``{load_error: str}``.

        Each tool is ``{package, name, description, parameters}`` exactly as
        ``ToolRuntime#schemas()`` projects it, for this bridge's version (its era).
        """
        return self._cached("schemas", config=_config_payload(config))

    def escalate(self, request: EscalationRequest) -> dict[str, Any]:
        """Raw result of the real ``validateEscalationArgs`` + ``approveEscalation``:
        ``{stage, message, granted, asked, answered}``."""
        return self._cached("escalate", request=request.to_dict())

    def markers(self, mode: str, *, escalation_advertised: bool = True) -> dict[str, Any]:
        """Raw ``{denial, hint}`` from the real marker functions."""
        return self._cached("markers", mode=mode, escalation_advertised=escalation_advertised)

    # ---------------------------------------------------------------- closing
    def _kill(self) -> None:
        proc = self._proc
        self._proc = None
        if proc is None:
            return
        try:
            if proc.stdin:
                proc.stdin.close()
        except OSError:
            pass
        try:
            proc.wait(timeout=3)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def close(self) -> None:
        """Stop the node process (it also exits by itself when stdin closes)."""
        with self._lock:
            running = self._proc is not None
            self._kill()
            if running:
                self._set_state("idle", "closed")

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return proc.pid if proc is not None and proc.poll() is None else None


_bridges: dict[str, Bridge] = {}
_bridges_lock = threading.Lock()


def get_bridge(version: str | None = None) -> Bridge:
    """The process-wide bridge for ``version`` (default :data:`DEFAULT_VERSION`).

    A non-default version is checked against :func:`published_versions`.
    """
    version = version or DEFAULT_VERSION
    with _bridges_lock:
        if version in _bridges:
            return _bridges[version]
    # Known versions need no registry round trip (the inspector asks from the kernel thread).
    if version not in KNOWN_PUBLISHED_VERSIONS and version not in published_versions():
        raise InvalidArgument(
            f"version {version!r} of {TOOL_PACKAGES[0]} is not published; "
            f"choose one of {', '.join(published_versions())}"
        )
    with _bridges_lock:
        if not _bridges:
            _register_exit()
        return _bridges.setdefault(version, Bridge(version))


def _close_all() -> None:
    for b in list(_bridges.values()):
        try:
            b.close()
        except Exception:  # noqa: BLE001 - best effort at interpreter exit
            pass


_unregister_exit: Callable[[], None] | None = None


def _register_exit() -> None:
    """Close the bridges at exit (BRIDGES step), registered with the first
    bridge rather than at import (caller holds ``_bridges_lock``)."""
    global _unregister_exit
    if _unregister_exit is None:
        _unregister_exit = shutdown.register(shutdown.BRIDGES, _close_all)
