"""How a helper process of this package starts (dsh_magics/terminal/core/boot.py):
its import path, and the package it runs whatever its cwd and PYTHONPATH hold.
The helpers themselves started so: tests/terminal/test_watchdog.py (the
watchdog), tests/host/test_lifecycle.py (the host and its sweeper),
tests/magics/test_terminal_tab_magic.py (the Lab tab's attach client)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from dsh_magics.terminal.core import boot
from dsh_magics.terminal.core.boot import boot_argv, booted
from tests.decoys import imported, plant


def test_the_package_goes_before_a_site_packages_inside_the_standard_library(tmp_path: Path) -> None:
    """A helper's import path: the package's directory right before the
    first site directory after the standard library, wherever that site
    directory lives. On pyenv (this machine), python.org builds, Docker's
    python images, conda and Fedora, site-packages is inside the standard
    library's directory; everything under that directory was taken for the
    standard library, so the package went after site-packages and the user
    site, and an owner run from a checkout got an installed copy's watchdog.
    The placement the helper's interpreter runs (``boot.place``) on made-up
    paths, then this interpreter's own path as a helper sees it."""
    place = boot.place
    std, user = "/py/lib/python3.11", "/home/u/.local/lib/python3.11/site-packages"
    stdlib = ["/py/lib/python311.zip", std, f"{std}/lib-dynload"]
    sites = {user, f"{std}/site-packages"}
    path = ["", "/pp", *stdlib, user, f"{std}/site-packages", f"{std}/site-packages/x.egg", "/ckout"]
    assert place(path, "/ckout", std, sites) == ["/pp", *stdlib, "/ckout", user, f"{std}/site-packages", f"{std}/site-packages/x.egg"]
    # An installed copy: its site-packages goes before the other site directories.
    assert place(path, f"{std}/site-packages", std, sites) == ["/pp", *stdlib, f"{std}/site-packages", user, f"{std}/site-packages/x.egg", "/ckout"]
    # Debian's layout, site directories outside the standard library's.
    deb = ["/usr/lib/python311.zip", "/usr/lib/python3.11", "/usr/lib/python3.11/lib-dynload"]
    dist = ["/usr/local/lib/python3.11/dist-packages", "/usr/lib/python3/dist-packages"]
    assert place([*deb, *dist], "/ckout", "/usr/lib/python3.11", set(dist)) == [*deb, "/ckout", *dist]
    # No site directory known (an interpreter without site.getsitepackages): by name; none at all: last.
    assert place([*deb, *dist], "/ckout", "/usr/lib/python3.11", set()) == [*deb, "/ckout", *dist]
    assert place(["", *stdlib], "/ckout", std, set()) == [*stdlib, "/ckout"]
    # A site directory named on PYTHONPATH (before the standard library) stays where it was put.
    assert place([user, *stdlib], "/ckout", std, {user}) == [user, *stdlib, "/ckout"]

    (tmp_path / "probe_path.py").write_text("import json, sys\nprint(json.dumps(sys.path))\n")
    out = subprocess.run(
        [sys.executable, "-c", boot.STUB, boot.__file__, str(tmp_path), "probe_path"],
        capture_output=True, text=True, cwd="/", timeout=60,
    )  # fmt: skip
    seen = json.loads(out.stdout)
    at = seen.index(str(tmp_path))
    assert os.path.dirname(os.__file__) in seen[:at]
    import site

    for d in [*site.getsitepackages(), site.getusersitepackages()]:
        if d in seen:
            assert seen.index(d) > at, (d, seen)


def test_a_helper_runs_its_own_package_among_decoys(tmp_path: Path) -> None:
    """Run in a directory holding a ``runpy.py``, a ``json.py`` and a package
    named like the helper's, with PYTHONPATH naming another such package, a
    helper imports the standard library and its own package, runs its module
    as ``-m`` would (``__main__``, ``sys.argv``) and imports no decoy. ``-m``
    put the cwd first (a host in the user's home died at import); the boot
    imported ``runpy`` before placing the path (frozen from Python 3.11 on:
    this fails so under 3.10), and a PYTHONPATH entry came before the
    package's own directory."""
    root, cwd, pp, used = (tmp_path / n for n in ("root", "cwd", "pp", "used"))
    (root / "bootprobe").mkdir(parents=True)
    (root / "bootprobe/__init__.py").write_text("")
    (root / "bootprobe/__main__.py").write_text(
        "import json, os, sys\n"
        "std = os.path.dirname(os.__file__)\n"
        "print(json.dumps({'name': __name__, 'file': __file__, 'argv': sys.argv, 'json': json.__file__, 'std': std}))\n"
    )
    plant(cwd, used, ("runpy", "json", "signal", "bootprobe/"))
    plant(pp, used, ("bootprobe/",))
    argv = [sys.executable, "-c", boot.STUB, boot.__file__, str(root), "bootprobe", "a", "b"]
    out = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=dict(os.environ, PYTHONPATH=str(pp)), timeout=60)
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert seen["name"] == "__main__" and seen["file"] == str(root / "bootprobe/__main__.py")
    assert seen["argv"] == [seen["file"], "a", "b"]
    assert seen["json"] == os.path.join(seen["std"], "json", "__init__.py")
    assert imported(used) == []


def test_a_booted_process_is_known_by_its_cmdline() -> None:
    """``booted`` reads back what ``boot_argv`` started (the watchdog is found
    so by a crashed host's sweeper); ``python -m`` is not a boot."""
    cmdline = b"".join(os.fsencode(a) + b"\0" for a in boot_argv("dsh_magics.host", "reap", "--pid", "7"))
    assert booted(cmdline) == [b"dsh_magics.host", b"reap", b"--pid", b"7"]
    assert booted(b"".join(a + b"\0" for a in (b"python", b"-m", b"dsh_magics.host", b"reap"))) is None
    # ps shows the module and its arguments after the stub and two paths, not after the boot's text
    argv = boot_argv("dsh_magics.host", "serve")
    assert argv.index("dsh_magics.host") == 5 and len(boot.STUB) < 200, argv


def test_a_relative_pythonpath_entry_is_not_the_helpers_cwd(tmp_path: Path) -> None:
    """``PYTHONPATH=:/x`` (``export PYTHONPATH=$PYTHONPATH:/x`` with none set)
    or ``.``: site makes the relative entry the helper's cwd, before the
    standard library, and a ``json.py`` there (the host runs in the user's
    home) came first again. The entries the user wrote absolute stay."""
    root, cwd, pp, used = (tmp_path / n for n in ("root", "cwd", "pp", "used"))
    (root / "bootprobe").mkdir(parents=True)
    (root / "bootprobe/__init__.py").write_text("")
    (root / "bootprobe/__main__.py").write_text("import json, sys\nprint(json.dumps(sys.path))\n")
    plant(cwd, used, ("json", "signal"))
    pp.mkdir()
    for value in (f":{pp}", f".{os.pathsep}{pp}", f"{pp}{os.pathsep}"):
        argv = [sys.executable, "-c", boot.STUB, boot.__file__, str(root), "bootprobe"]
        out = subprocess.run(argv, capture_output=True, text=True, cwd=cwd, env=dict(os.environ, PYTHONPATH=value), timeout=60)
        assert out.returncode == 0, (value, out.stderr)
        seen = json.loads(out.stdout)
        assert str(cwd) not in seen and str(pp) in seen, (value, seen)
    assert imported(used) == []


def test_an_install_without_source_falls_back_to_dash_m(monkeypatch) -> None:
    """The stub runs ``boot.py``'s source: where there is none (``.pyc``
    files only), a helper gets ``python -m`` as before, not a stub that
    compiled the bytecode as text and died ("source code string cannot
    contain null bytes")."""
    monkeypatch.setattr(boot, "__file__", "/opt/site-packages/dsh_magics/terminal/core/boot.pyc")
    assert boot_argv("dsh_magics.host", "serve") == [sys.executable, "-m", "dsh_magics.host", "serve"]
