"""Build and install the labextension in ``js/`` (one command, ``terminal:open``, behind
an output renderer).

JupyterLab offers no URL that opens a terminal tab, so a front-end piece is needed. It is
built on the machine from pinned npm packages with JupyterLab's own builder
(``jupyter labextension build``), cached by the hash of its source and pins, and copied
into the user's Jupyter data directory. The built bundle is never committed.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from ..errors import DshError

NAME = "dsh-magics"
SOURCE = Path(__file__).resolve().parent / "js"
# Exact versions npm installs for the build. The package.json ranges stay wide (^4, ^2):
# they are what the bundle asks of JupyterLab's shared copies at run time.
PINS = ("@jupyterlab/builder@4.5.11", "@jupyterlab/rendermime@4.5.11", "@lumino/widgets@2.11.0")
SOURCE_FILES = ("package.json", "index.js")


class BuildFailed(DshError):
    code = "LAB_EXTENSION_BUILD_FAILED"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dsh-magics" / "labextension"


def source_hash() -> str:
    h = hashlib.sha256()
    for pin in PINS:
        h.update(pin.encode() + b"\0")
    for name in SOURCE_FILES:
        h.update(name.encode() + b"\0" + (SOURCE / name).read_bytes() + b"\0")
    return h.hexdigest()[:16]


def built(root: Path | None = None) -> Path | None:
    """The built extension for the current source, or None if not built yet."""
    out = (root or cache_root()) / source_hash() / "build"
    return out if (out / "package.json").is_file() else None


def build(root: Path | None = None, *, log: bool = True) -> Path:
    """Build the extension (npm install of :data:`PINS`, then ``jupyter labextension
    build``) unless this source is built already; return the output directory."""
    done = built(root)
    if done is not None:
        return done
    for tool in ("node", "npm"):
        if shutil.which(tool) is None:
            raise BuildFailed(f"building the JupyterLab extension needs {tool} on PATH")
    top = root or cache_root()
    top.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="build-", dir=top))
    try:
        for name in SOURCE_FILES:
            shutil.copyfile(SOURCE / name, work / name)
        _run(
            ["npm", "install", "--no-save", "--no-audit", "--no-fund", "--loglevel=error", *PINS],
            work,
            log,
        )
        # --core-path: the shared package versions of the JupyterLab installed here
        # (its staging/package.json), not a core-meta looked up on the network.
        core = Path(importlib.import_module("jupyterlab").__file__ or "").parent / "staging"
        _run(
            [
                sys.executable,
                "-m",
                "jupyter",
                "labextension",
                "build",
                f"--core-path={core}",
                str(work),
            ],
            work,
            log,
        )
        final = top / source_hash()
        shutil.rmtree(final, ignore_errors=True)
        final.mkdir()
        shutil.copytree(work / "build", final / "build")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = built(root)
    assert out is not None
    return out


def _run(argv: list[str], cwd: Path, log: bool) -> None:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise BuildFailed(f"{' '.join(argv[:3])} failed ({done.returncode}): " + " | ".join(tail))
    if log:
        print(f"dsh-magics labextension: {' '.join(argv[:4])}: ok", file=sys.stderr)


def install_dir() -> Path:
    """Where JupyterLab finds a prebuilt extension of this user."""
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "labextensions" / NAME


def install(dest: Path | None = None) -> Path:
    """Build if needed, then copy the extension to ``dest`` (default: the user's
    Jupyter data directory). JupyterLab picks it up on its next page load."""
    src = build()
    target = dest or install_dir()
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(src, target)
    return target
