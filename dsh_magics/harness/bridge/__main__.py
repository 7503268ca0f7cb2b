"""``python -m dsh_magics.harness.bridge install|status [--version V]``.

``install`` fetches the pinned packages of every live era (or of ``--version``) and boots
each bridge once (``.ci/run`` uses it).
"""

from __future__ import annotations

import json
import sys
import time

from ...errors import BridgeUnavailable
from ..facts import TOOL_PACKAGES
from . import Bridge
from .install_plan import DEFAULT_INSTALLS
from .npm_install import stderr_progress


def _install(version: str) -> bool:
    bridge = Bridge(version)
    started = time.monotonic()
    try:
        if bridge.is_installed():
            stderr_progress(f"{version} already installed in {bridge.prefix}")
        bridge.start()
        assert bridge.hello is not None
        versions = bridge.hello.get("versions", {})
        standins = bridge.hello.get("standins", {})
        stderr_progress(
            f"live bridge ready in {time.monotonic() - started:.1f}s: node {bridge.hello.get('node')}, "
            f"dsh-tool-bash {versions.get(TOOL_PACKAGES[0])}"
            + "".join(
                f"; stand-in {pkg}: {', '.join(s['names'])} from {s['from']}"
                for pkg, s in standins.items()
            )
        )
    except BridgeUnavailable as exc:
        print(f"dsh-magics: {version}: {exc.message.splitlines()[0]}", file=sys.stderr)
        return False
    finally:
        bridge.close()
    return True


def main(argv: list[str] | None = None) -> int:
    """``python -m dsh_magics.harness.bridge install|status [--version V]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m dsh_magics.harness.bridge")
    parser.add_argument("action", choices=("install", "status"))
    parser.add_argument(
        "--version",
        default=None,
        help=f"one dsh-tool-bash version (default: every live era: {', '.join(DEFAULT_INSTALLS)})",
    )
    args = parser.parse_args(argv)
    versions = (args.version,) if args.version else DEFAULT_INSTALLS
    if args.action == "status":
        for v in versions:
            bridge = Bridge(v)
            print(json.dumps({**bridge.status().to_dict(), "prefix": str(bridge.prefix)}))
        return 0
    results = [_install(v) for v in versions]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
