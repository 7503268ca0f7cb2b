"""The live bridge: a persistent Node process running the real published packages.

Only the harness's own code gives its exact texts, which we must not store (docs/inspector.md).
Installing lives in :mod:`.npm_install`, the process and its protocol in :mod:`.node_process`.

May import: the rest of harness/, errors, shutdown. Must not import: terminal/,
host/ or any adapter.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ... import shutdown
from ...errors import BridgeUnavailable, InvalidArgument
from ..escalation_types import EscalationRequest
from ..facts import DEFAULT_VERSION, KNOWN_PUBLISHED_VERSIONS, TOOL_PACKAGES
from ..schema_types import Config
from . import npm_install
from .install_plan import InstallPlan, plan_for
from .node_process import NodeProcess, reply_result
from .npm_install import Progress, cache_root, install_dir, published_versions, stderr_progress
from .status import LiveStatus

log = logging.getLogger(__name__)


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
        self._progress = progress or stderr_progress
        self._lock = threading.RLock()  # guards process lifecycle and the pipe
        self._node: NodeProcess | None = None
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
                log.exception("a live bridge status listener failed")

    # ---------------------------------------------------------------- install
    def is_installed(self) -> bool:
        """The pinned packages (and stand-ins) of this version's plan are in place."""
        return npm_install.is_installed(self.prefix, self.version, self.plan)

    def install(self) -> None:
        """Install the pinned packages into the cache (no-op when present)."""
        npm_install.install(self.prefix, self.version, self.plan, self._progress)

    # ------------------------------------------------------------------- boot
    def start(self) -> None:
        """Install if needed and boot the node process; blocks; idempotent.

        Raises :class:`BridgeUnavailable` (and records it in :meth:`status`).
        """
        with self._lock:
            if self._node is not None and self._node.alive:
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
        self._node = NodeProcess(npm_install.find_tool("node"), self.prefix, self.node_options)
        self.hello = self._call("hello")
        # Warm the JIT on the default configuration (and cache it), so the
        # first request a user makes is as fast as the following ones.
        self._cache[self._key("schemas", config=_config_payload(Config()))] = self._call(
            "schemas", config=_config_payload(Config())
        )

    def start_background(self) -> concurrent.futures.Future[LiveStatus]:
        """Do :meth:`start` on a daemon thread; the future resolves to the final
        :class:`LiveStatus` (``ready`` or ``unavailable``) and never raises."""
        with self._lock:
            if self._future is not None and not self._future.done():
                return self._future
            fut: concurrent.futures.Future[LiveStatus] = concurrent.futures.Future()
            if self._node is not None and self._node.alive:
                fut.set_result(self.status())
                return fut
            self._future = fut

        def run() -> None:
            try:
                self.start()
            except BridgeUnavailable:
                pass  # start() recorded why in the status the future resolves to
            except Exception as exc:  # noqa: BLE001 - the future must always resolve
                self._set_state("unavailable", str(exc))
            fut.set_result(self.status())

        threading.Thread(target=run, name="dsh-bridge-start", daemon=True).start()
        return fut

    # ------------------------------------------------------------------ calls
    def _call(self, op: str, **payload: Any) -> Any:
        with self._lock:
            node = self._node
            if node is None or not node.alive:
                raise BridgeUnavailable("node bridge is not running")
            try:
                req_id, reply = node.exchange(op, payload)
            except BridgeUnavailable as exc:
                self._set_state("unavailable", exc.message)
                raise
            return reply_result(req_id, reply)

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
    def close(self) -> None:
        """Stop the node process (it also exits by itself when stdin closes)."""
        with self._lock:
            node, self._node = self._node, None
            if node is not None:
                node.stop()
                self._set_state("idle", "closed")

    @property
    def pid(self) -> int | None:
        node = self._node
        return node.pid if node is not None else None


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
        except Exception:  # noqa: BLE001 - best effort at interpreter exit: close the others
            log.warning("closing the live bridge %s failed", b.version, exc_info=True)


_unregister_exit: Callable[[], None] | None = None


def _register_exit() -> None:
    """Close the bridges at exit (BRIDGES step), registered with the first
    bridge rather than at import (caller holds ``_bridges_lock``)."""
    global _unregister_exit
    if _unregister_exit is None:
        _unregister_exit = shutdown.register(shutdown.BRIDGES, _close_all)


__all__ = [
    "Bridge",
    "LiveStatus",
    "Progress",
    "cache_root",
    "get_bridge",
    "install_dir",
    "published_versions",
]
