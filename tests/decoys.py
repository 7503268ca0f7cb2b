"""Modules named like standard ones (or like this package) that mark their
import and end the process: put in a helper's cwd or on its PYTHONPATH, they
show whether it ran the wrong code (dsh_magics/terminal/core/boot.py). One
copy, shared by the boot, host and Lab terminal tests."""

from __future__ import annotations

import os
from pathlib import Path

#: What a host, its sweeper or an attach client imports after start-up (or, on
#: another Python, at it), and this package: a name ending in ``/`` is a package.
NAMES = ("json", "signal", "socket", "selectors", "argparse", "random", "enum", "types", "runpy", "termios", "dsh_magics/")


def plant(directory: Path, used: Path, names: tuple[str, ...] = NAMES) -> None:
    """``names`` in ``directory``, each marking its import with a file in
    ``used`` (named after the decoy's path) before it raises SystemExit."""
    used.mkdir(parents=True, exist_ok=True)
    for name in names:
        path = directory / (f"{name}__init__.py" if name.endswith("/") else f"{name}.py")
        path.parent.mkdir(parents=True, exist_ok=True)
        mark = used / str(path).replace(os.sep, "_")
        why = f"a decoy {name.rstrip('/')} was imported"
        path.write_text(f"open({str(mark)!r}, 'w').close()\nraise SystemExit({why!r})\n")


def imported(used: Path) -> list[str]:
    """The decoys imported so far (their paths, ``/`` as ``_``)."""
    return sorted(p.name for p in used.iterdir()) if used.exists() else []
