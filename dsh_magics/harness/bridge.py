"""Python client of the live Node bridge (skeleton; filled in next commit)."""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .facts import DEFAULT_VERSION
from .types import Config, EscalationRequest, LiveStatus


class Bridge:
    """A persistent ``node`` process running the real published packages."""

    def __init__(
        self,
        version: str = DEFAULT_VERSION,
        *,
        cache_dir: Path | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.version = version

    def status(self) -> LiveStatus:
        return LiveStatus(state="idle", version=self.version)

    def on_status(self, callback: Callable[[LiveStatus], None]) -> Callable[[], None]:
        raise NotImplementedError

    def is_installed(self) -> bool:
        raise NotImplementedError

    def install(self) -> None:
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def start_background(self) -> concurrent.futures.Future[LiveStatus]:
        raise NotImplementedError

    def schemas(self, config: Config) -> dict[str, Any]:
        raise NotImplementedError

    def escalate(self, request: EscalationRequest) -> dict[str, Any]:
        raise NotImplementedError

    def markers(self, mode: str, *, escalation_advertised: bool = True) -> dict[str, Any]:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


def get_bridge(version: str | None = None) -> Bridge:
    raise NotImplementedError


def published_versions() -> tuple[str, ...]:
    raise NotImplementedError
