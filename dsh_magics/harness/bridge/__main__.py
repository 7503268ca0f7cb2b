"""``python -m dsh_magics.harness.bridge install|status [--version V]``.

``install`` fetches the pinned packages and boots the bridge once (``.ci/run`` uses it).
"""

from __future__ import annotations

import json
import sys
import time

from ...errors import BridgeUnavailable
from ..facts import DEFAULT_VERSION, TOOL_PACKAGES
from . import Bridge, _stderr_progress


def main(argv: list[str] | None = None) -> int:
    """``python -m dsh_magics.harness.bridge install|status [--version V]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m dsh_magics.harness.bridge")
    parser.add_argument("action", choices=("install", "status"))
    parser.add_argument("--version", default=DEFAULT_VERSION)
    args = parser.parse_args(argv)
    bridge = Bridge(args.version)
    if args.action == "status":
        print(json.dumps({**bridge.status().to_dict(), "prefix": str(bridge.prefix)}))
        return 0
    started = time.monotonic()
    try:
        if bridge.is_installed():
            _stderr_progress(f"{args.version} already installed in {bridge.prefix}")
        bridge.start()
        assert bridge.hello is not None
        versions = bridge.hello.get("versions", {})
        _stderr_progress(
            f"live bridge ready in {time.monotonic() - started:.1f}s: node {bridge.hello.get('node')}, "
            f"dsh-tool-bash {versions.get(TOOL_PACKAGES[0])}"
        )
    except BridgeUnavailable as exc:
        print(f"dsh-magics: {exc}", file=sys.stderr)
        return 1
    finally:
        bridge.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
