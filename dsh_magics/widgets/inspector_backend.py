"""The inspector's only door into :mod:`dsh_magics.harness`, with small caches.

Never blocks on the live bridge: only :meth:`start_live` boots it, on the bridge's own thread.
"""

from __future__ import annotations

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


class HarnessBackend:
    """Schema facts for the inspector from the model, and from live once it is ready.

    ``live=False`` never touches the bridge (plain model inspector).  Results are
    memoised per (source, input): the model is cheap but not free, and the live
    bridge already caches on its side; both are immutable, so sharing is safe.
    """

    def __init__(
        self, *, version: str | None = None, live: bool = True, bridge: Any = None
    ) -> None:
        # ``bridge``: a specific Bridge instance (default: the process-wide one for ``version``).
        self.version = (
            bridge.version if bridge is not None else (version or harness.DEFAULT_VERSION)
        )
        self.live_enabled = live
        self._bridge: Any | None = bridge
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

    def live_status(self) -> LiveStatus | None:
        """The bridge state (never blocks); ``None`` when live is disabled."""
        b = self.bridge
        return b.status() if b is not None else None

    def on_live_status(self, callback: Callable[[LiveStatus], None]) -> Callable[[], None]:
        b = self.bridge
        if b is None:
            return lambda: None
        return b.on_status(callback)  # type: ignore[no-any-return]

    def start_live(self) -> Any | None:
        """Install (if needed) and boot the bridge on its worker thread; returns the future."""
        b = self.bridge
        return b.start_background() if b is not None else None

    # -- facts ------------------------------------------------------------------------
    def schema(self, config: Config, source: str) -> SchemaView:
        key = (source, config)
        view = self._views.get(key)
        if view is None:
            view = harness.schema(
                config, source, version=self.version if source == "live" else None
            )
            with self._lock:
                self._views[key] = view
        return view

    def matrix(self, source: str, era: str) -> Matrix:
        key = (source, era)
        m = self._matrices.get(key)
        if m is None:
            m = harness.matrix(source, era, version=self.version if source == "live" else None)
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
        """The published packages only ever show the current era."""
        return era == CURRENT_ERA
