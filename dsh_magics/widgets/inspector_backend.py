"""The inspector's only door into :mod:`dsh_magics.harness`, with small caches.

Never blocks on the live bridge: only :meth:`start_live` boots it, on the bridge's own thread.
One bridge per live era (each era's published version lives in its own install tree).
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

from .. import harness
from ..harness import (
    CURRENT_ERA,
    Catalog,
    Config,
    Drift,
    EscalationRequest,
    EscalationResult,
    LiveStatus,
    Matrix,
    Preset,
    SchemaView,
)
from ..harness.facts import LIVE_ERAS


class HarnessBackend:
    """Schema facts for the inspector from the model, and from live once it is ready.

    ``live=False`` never touches the bridge (plain model inspector).  Results are
    memoised per (source, input): the model is cheap but not free, and the live
    bridge already caches on its side; both are immutable, so sharing is safe.
    The primary bridge (``version``, default the current era's) answers the
    current era and escalations; every other live era has its own bridge.
    """

    def __init__(
        self,
        *,
        version: str | None = None,
        live: bool = True,
        bridge: Any = None,
        era_bridges: dict[str, Any] | None = None,
    ) -> None:
        # ``bridge``: a specific Bridge instance (default: the process-wide one for ``version``);
        # ``era_bridges``: specific ones for other live eras (default: the process-wide ones).
        self.version = (
            bridge.version if bridge is not None else (version or harness.DEFAULT_VERSION)
        )
        self.live_enabled = live
        #: The era the primary bridge's version carries (the current one by default).
        self.primary_era = next((e for e, v in LIVE_ERAS.items() if v == self.version), CURRENT_ERA)
        self._bridge: Any | None = bridge
        self._era_bridges: dict[str, Any] = dict(era_bridges or {})
        self._lock = threading.Lock()
        self._views: dict[tuple[str, Config], SchemaView] = {}
        self._matrices: dict[tuple[str, str], Matrix] = {}
        self._escalations: dict[tuple[str, EscalationRequest], EscalationResult] = {}
        self._presets: dict[str, Preset] | None = None

    # -- live bridge ------------------------------------------------------------------
    @property
    def bridge(self) -> Any | None:
        if not self.live_enabled:
            return None
        if self._bridge is None:
            self._bridge = harness.get_bridge(self.version)
        return self._bridge

    def version_for(self, era: str) -> str | None:
        """The published version whose texts are ``era``'s (``None``: model only)."""
        if era == self.primary_era:
            return self.version
        return LIVE_ERAS.get(era)

    def bridge_for(self, era: str) -> Any | None:
        """The bridge answering ``era`` (``None`` when live is off or the era is model only)."""
        if not self.live_enabled or not self.live_covers(era):
            return None
        if era == self.primary_era:
            return self.bridge
        with self._lock:
            if era not in self._era_bridges:
                self._era_bridges[era] = harness.get_bridge(LIVE_ERAS[era])
            return self._era_bridges[era]

    def _all_bridges(self) -> list[Any]:
        found = [self.bridge_for(e) for e in (self.primary_era, *LIVE_ERAS)]
        out: list[Any] = []
        for b in found:
            if b is not None and all(b is not o for o in out):
                out.append(b)
        return out

    def live_status(self, era: str | None = None) -> LiveStatus | None:
        """The bridge state for ``era`` (default: the primary); never blocks;
        ``None`` when live is disabled or the era has no published package."""
        b = self.bridge if era is None else self.bridge_for(era)
        return b.status() if b is not None else None

    def live_idle(self) -> bool:
        """Some live era's bridge has not been started yet."""
        return any(b.status().state == "idle" for b in self._all_bridges())

    def on_live_status(self, callback: Callable[[LiveStatus], None]) -> Callable[[], None]:
        """Subscribe to every live era's bridge; returns one unsubscribe for all."""
        offs = [b.on_status(callback) for b in self._all_bridges()]

        def unsubscribe() -> None:
            for off in offs:
                off()

        return unsubscribe

    def start_live(self) -> Any | None:
        """Install (if needed) and boot every live era's bridge on its worker thread.

        Returns one future that resolves, once all of them have settled, to the
        primary bridge's final :class:`LiveStatus`.
        """
        bridges = self._all_bridges()
        if not bridges:
            return None
        futures = [b.start_background() for b in bridges]
        combined: concurrent.futures.Future[LiveStatus] = concurrent.futures.Future()
        lock = threading.Lock()

        def settle(_f: Any) -> None:
            with lock:
                if not combined.done() and all(f.done() for f in futures):
                    combined.set_result(futures[0].result())

        for f in futures:
            f.add_done_callback(settle)
        return combined

    # -- facts ------------------------------------------------------------------------
    def schema(self, config: Config, source: str) -> SchemaView:
        key = (source, config)
        view = self._views.get(key)
        if view is None:
            view = harness.schema(
                config, source, version=self.version_for(config.era) if source == "live" else None
            )
            with self._lock:
                self._views[key] = view
        return view

    def matrix(self, source: str, era: str) -> Matrix:
        key = (source, era)
        m = self._matrices.get(key)
        if m is None:
            m = harness.matrix(
                source, era, version=self.version_for(era) if source == "live" else None
            )
            with self._lock:
                self._matrices[key] = m
        return m

    def escalate(self, request: EscalationRequest, source: str) -> EscalationResult:
        key = (source, request)
        r = self._escalations.get(key)
        if r is None:
            r = harness.escalate(
                request, source, version=self.version if source == "live" else None
            )
            with self._lock:
                self._escalations[key] = r
        return r

    def presets(self) -> dict[str, Preset]:
        if self._presets is None:
            self._presets = harness.presets()
        return self._presets

    def check(self, catalog: Catalog, source: str) -> Drift:
        return harness.check(catalog, source, version=self.version if source == "live" else None)

    @staticmethod
    def live_covers(era: str) -> bool:
        """Eras with a published package (:data:`~dsh_magics.harness.facts.LIVE_ERAS`)."""
        return era in LIVE_ERAS
