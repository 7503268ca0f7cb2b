"""Named compositions worth comparing: ``catalog-default``, ``dsh-base``, ``package-default``.

What each one composes: docs/inspector.md, "Internals".
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ..errors import InvalidArgument
from .facts import (
    BASE_BUNDLE_DEFAULT_MODE,
    CONFINED_MODES,
    PACKAGE_DEFAULT_MODE,
    PERMISSION_MODE_ENV,
)
from .schema_types import Config, Preset

PRESET_KEYS: tuple[str, ...] = ("catalog-default", "dsh-base", "package-default")


def _base_mode(env: Mapping[str, str]) -> str:
    mode = env.get(PERMISSION_MODE_ENV) or BASE_BUNDLE_DEFAULT_MODE
    if mode not in CONFINED_MODES:
        raise InvalidArgument(
            f"{PERMISSION_MODE_ENV}={mode!r} is not a sandbox mode; expected one of {', '.join(CONFINED_MODES)}"
        )
    return mode


def all_presets(env: Mapping[str, str] | None = None) -> dict[str, Preset]:
    """Every preset; ``env`` defaults to ``os.environ`` (read for ``dsh-base``)."""
    env = os.environ if env is None else env
    base_mode = _base_mode(env)
    return {
        "catalog-default": Preset(
            key="catalog-default",
            title="Tool catalog default",
            config=Config(background=True, sandbox=None),
            policy="ask",
            approver=False,
            note="Unconfined local executor, default config: no escalation fields, and no "
            "approval service composed.",
        ),
        "dsh-base": Preset(
            key="dsh-base",
            title=f"dsh-base on Linux/macOS ({base_mode})",
            config=Config(background=True, sandbox=base_mode),  # type: ignore[arg-type]
            policy="never" if base_mode == "danger-full-access" else "ask",
            approver=True,
            note=f"Confining executor; mode from {PERMISSION_MODE_ENV} (default "
            f"{BASE_BUNDLE_DEFAULT_MODE}); approvals disabled under danger-full-access, where "
            "the escalation fields are still advertised but nothing is wider.",
        ),
        "package-default": Preset(
            key="package-default",
            title="Sandbox policy package default",
            config=Config(background=True, sandbox=PACKAGE_DEFAULT_MODE),
            policy="ask",
            approver=True,
            note="The policy package's fail-safe default mode, read-only, which differs from "
            "the base bundle's workspace-write.",
        ),
    }


def get_preset(key: str, env: Mapping[str, str] | None = None) -> Preset:
    """One preset by key."""
    presets = all_presets(env)
    if key not in presets:
        raise InvalidArgument(f"unknown preset {key!r}; expected one of {', '.join(PRESET_KEYS)}")
    return presets[key]
