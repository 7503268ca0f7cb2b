"""How a helper process of this package starts: the owner watchdog, the
terminal host, the host's orphan sweeper, the JupyterLab tab's attach
client. Not ``python -m``: that puts the current directory first on the
import path, and these processes run in the user's home (the host) or the
Jupyter server's directory (the attach client), where a ``json.py``,
``signal.py`` or ``dsh_magics/`` of the user's shadowed the standard library
or this package and the process died at import (tests/host/test_lifecycle.py::
test_a_host_started_among_modules_named_like_standard_ones_runs_ours).
Why and what still shadows: docs/internals.md, "How a helper process starts".
"""

from __future__ import annotations

import os
import sys

# The import path a helper gets: the directory holding this package right
# before the first site directory after the standard library (site-packages,
# the user site; a ``.pth`` file's entries come after theirs), and no cwd
# entry. Never before the standard library: for an installed copy that
# directory is site-packages, where a module named like a standard one,
# enum34's ``enum`` say, would have shadowed it and the watchdog died at
# import, unseen (tests/terminal/test_watchdog.py::
# test_the_watchdog_runs_this_package_and_the_standard_library). Ahead of any
# other copy of the package: an owner run from a checkout got an installed
# copy's watchdog or none. Not "after every entry under the standard
# library's directory": on pyenv, python.org builds, Docker's python images,
# conda and Fedora site-packages is in there (tests/terminal/test_boot.py::
# test_the_package_goes_before_a_site_packages_inside_the_standard_library).
# ``_PLACE`` runs in the helper's interpreter before any import of ours (the
# tests run it on made-up paths).
_PLACE = """\
import os
def place(path, root, std, sites):
    path = [p for p in path if p and p != root]
    after = path.index(std) if std in path else -1
    at = next((i for i, p in enumerate(path) if i > after and (p in sites or os.path.basename(p) in ("site-packages", "dist-packages"))), len(path))
    return path[:at] + [root] + path[at:]
"""
# Then the package named first in the module is imported from that
# directory itself, whatever the path says: a PYTHONPATH entry (before the
# standard library, where the user put it) holding another copy, or a decoy,
# came first (test_boot.py::test_a_helper_runs_its_own_package_among_decoys).
# Only ``sys`` and ``os`` (loaded at start-up) and ``site`` as loaded (none
# under ``python -S``) are used before the path is placed: a ``runpy.py`` in
# the cwd was what ``import runpy`` found.
_BOOT = (
    "import sys\n"
    + _PLACE
    + """\
root, module = sys.argv[1:3]
del sys.argv[1:3]
site = sys.modules.get("site")
sites = [*getattr(site, "getsitepackages", list)(), getattr(site, "getusersitepackages", str)()]
sys.path[:] = place(sys.path, root, os.path.dirname(os.__file__), {os.path.abspath(s) for s in sites if s})
import runpy
from importlib.machinery import PathFinder
from importlib.util import module_from_spec
top = module.partition(".")[0]
spec = PathFinder.find_spec(top, [root])
if spec is not None and spec.loader is not None and spec.submodule_search_locations is not None:
    sys.modules[top] = module_from_spec(spec)
    spec.loader.exec_module(sys.modules[top])
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""
)


def root() -> str:
    """The directory holding this package (a checkout, or site-packages)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def boot_argv(module: str, *args: str) -> list[str]:
    """This interpreter running ``module`` of this very package as ``-m``
    would (``__main__``, ``sys.argv``), with the import path :data:`_BOOT`
    makes. ``ps`` shows ``<python> -c <boot> <root> <module> <args>``."""
    return [sys.executable, "-c", _BOOT, root(), module, *args]


def booted(cmdline: bytes) -> list[bytes] | None:
    """The module and arguments of a process started by :func:`boot_argv`,
    from its ``/proc/<pid>/cmdline`` (each argument ends in a NUL), else None."""
    argv = cmdline.split(b"\0")[:-1]
    if argv[1:2] != [b"-c"] or len(argv) < 5:
        return None
    return argv[4:]
