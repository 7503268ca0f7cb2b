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

# No ``from __future__`` import: this file is also a helper's first code
# (``_main``, run by :data:`STUB`), where nothing may be imported from the
# path before the path is placed (``__future__`` is a module on it).
import os
import sys

STUB = (
    "import sys;sys.path[:]=[p for p in sys.path if p];"
    "f=open(sys.argv[1],'rb');s=f.read();f.close();exec(compile(s,sys.argv[1],'exec'))"
)
"""A helper's ``-c`` program: drop the cwd entry (``''``), then run this
file, whose ``__main__`` part places the path and runs the module. Short,
so that ``ps`` shows the module and its arguments (the boot's own text,
about 670 characters, came first until session 40). The file is closed
before it runs: under ``-X dev`` or ``PYTHONWARNINGS`` an open one printed
a ResourceWarning into the attach client's tab."""


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
def place(path: list[str], root: str, std: str, sites: set[str]) -> list[str]:
    """``path`` without empty entries and ``root``, with ``root`` put back
    right before the first site directory after ``std`` (the standard
    library's directory), or last."""
    path = [p for p in path if p and p != root]
    after = path.index(std) if std in path else -1
    at = next(
        (i for i, p in enumerate(path) if i > after and (p in sites or os.path.basename(p) in ("site-packages", "dist-packages"))),
        len(path),
    )
    return path[:at] + [root] + path[at:]


def root() -> str:
    """The directory holding this package (a checkout, or site-packages)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def boot_argv(module: str, *args: str) -> list[str]:
    """This interpreter running ``module`` of this very package as ``-m``
    would (``__main__``, ``sys.argv``), with the import path :func:`place`
    makes. ``ps`` shows ``<python> -c <STUB> <this file> <root> <module> <args>``.
    An install without this file's source (``.pyc`` only, a zip) gets
    ``-m``, with its cwd first on the path: the stub runs source."""
    here = os.path.abspath(__file__)
    if not here.endswith(".py"):
        return [sys.executable, "-m", module, *args]
    return [sys.executable, "-c", STUB, here, root(), module, *args]


def booted(cmdline: bytes) -> list[bytes] | None:
    """The module and arguments of a process started by :func:`boot_argv`,
    from its ``/proc/<pid>/cmdline`` (each argument ends in a NUL), else None."""
    argv = cmdline.split(b"\0")[:-1]
    if argv[1:3] != [b"-c", STUB.encode()] or len(argv) < 6:
        return None
    return argv[5:]


def _main() -> None:
    """In the helper, run by :data:`STUB`: ``sys.argv`` is ``['-c', this
    file, root, module, *args]``. Until the path is placed only ``sys`` and
    ``os`` (loaded at start-up) and ``site`` as loaded (none under ``python
    -S``) are used: ``import runpy`` found a ``runpy.py`` in the cwd under
    Python 3.10. Then the package named first in the module is imported
    from ``root`` itself, whatever the path says: a PYTHONPATH entry (before
    the standard library, where the user put it) holding another copy, or a
    decoy, came first (test_boot.py::test_a_helper_runs_its_own_package_among_decoys)."""
    top_dir, module = sys.argv[2:4]
    del sys.argv[1:4]
    # A relative PYTHONPATH entry ("", ".": ``PYTHONPATH=$PYTHONPATH:/x``
    # with none set gives ":/x") is the helper's cwd by now, put before the
    # standard library by site: the home's json.py came first again, though
    # the user meant wherever they set it (test_boot.py::
    # test_a_relative_pythonpath_entry_is_not_the_helpers_cwd).
    pythonpath = "" if sys.flags.ignore_environment else os.environ.get("PYTHONPATH", "")
    relative = {os.path.abspath(p) for p in pythonpath.split(os.pathsep) if pythonpath and not os.path.isabs(p)}
    sys.path[:] = [p for p in sys.path if p not in relative]
    site = sys.modules.get("site")
    sites = [*getattr(site, "getsitepackages", list)(), getattr(site, "getusersitepackages", str)()]
    sys.path[:] = place(sys.path, top_dir, os.path.dirname(os.__file__), {os.path.abspath(s) for s in sites if s})
    import runpy
    from importlib.machinery import PathFinder
    from importlib.util import module_from_spec

    top = module.partition(".")[0]
    spec = PathFinder.find_spec(top, [top_dir])
    if spec is not None and spec.loader is not None and spec.submodule_search_locations is not None:
        sys.modules[top] = module_from_spec(spec)
        spec.loader.exec_module(sys.modules[top])
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    _main()
