"""``python -m dsh_magics.lab install|build``: the JupyterLab terminal-tab extension."""

from __future__ import annotations

import argparse
import sys

from ..errors import DshError
from . import extension


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m dsh_magics.lab", description=__doc__)
    p.add_argument(
        "action",
        choices=("install", "build"),
        help="build only, or build and install for this user",
    )
    args = p.parse_args(argv)
    try:
        path = extension.install() if args.action == "install" else extension.build()
    except DshError as e:
        print(f"{e.code}: {e.message}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
