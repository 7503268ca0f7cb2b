"""Terminal configuration: defaults, ``DSH_MAGICS_*`` environment, constructor overrides.

Validated up front, so a typo in an environment variable fails clearly, not as a hung shell.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from ..errors import InvalidArgument

ENV_PREFIX = "DSH_MAGICS_"


@dataclass(frozen=True)
class TerminalConfig:
    shell: str = "/bin/bash"
    login: bool = True
    cwd: str | None = None
    max_lines: int = 4000
    max_sessions: int = 16
    cols: int = 120
    rows: int = 30
    start_timeout: float = 15.0

    def __post_init__(self) -> None:
        if not isinstance(self.shell, str) or not self.shell:
            raise InvalidArgument("config 'shell' must be a non-empty path")
        if shutil.which(self.shell) is None:
            raise InvalidArgument(f"config 'shell': {self.shell!r} is not an executable")
        if not isinstance(self.login, bool):
            raise InvalidArgument("config 'login' must be true or false")
        if self.cwd is not None and not os.path.isdir(self.cwd):
            raise InvalidArgument(f"config 'cwd': {self.cwd!r} is not a directory")
        for name, low, high in (
            ("max_lines", 10, 10_000_000),
            ("max_sessions", 1, 10_000),
            ("cols", 20, 10_000),
            ("rows", 5, 10_000),
        ):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise InvalidArgument(f"config {name!r} must be an integer from {low} to {high}, got {value!r}")
        if not isinstance(self.start_timeout, (int, float)) or self.start_timeout <= 0:
            raise InvalidArgument("config 'start_timeout' must be a positive number of seconds")

    @classmethod
    def from_env(cls, environ: dict[str, str] | None = None, **overrides: Any) -> TerminalConfig:
        """Defaults, then ``DSH_MAGICS_<KEY>`` variables, then ``overrides``."""
        env = os.environ if environ is None else environ
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(ENV_PREFIX + f.name.upper())
            if raw is None or raw == "":
                continue
            values[f.name] = _parse(f.name, raw, cls.__dataclass_fields__[f.name].default)
        unknown = set(overrides) - {f.name for f in fields(cls)}
        if unknown:
            raise InvalidArgument(f"unknown config key(s): {', '.join(sorted(unknown))}")
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)

    def with_(self, **changes: Any) -> TerminalConfig:
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _parse(name: str, raw: str, default: Any) -> Any:
    var = ENV_PREFIX + name.upper()
    if isinstance(default, bool):
        low = raw.strip().lower()
        if low in ("1", "true", "yes", "on"):
            return True
        if low in ("0", "false", "no", "off"):
            return False
        raise InvalidArgument(f"{var} must be 0/1/true/false, got {raw!r}")
    if isinstance(default, int):
        try:
            return int(raw)
        except ValueError:
            raise InvalidArgument(f"{var} must be an integer, got {raw!r}") from None
    if isinstance(default, float):
        try:
            return float(raw)
        except ValueError:
            raise InvalidArgument(f"{var} must be a number, got {raw!r}") from None
    return raw
