"""A real container engine for the tests: podman, as in the shared recipe.

No image registry is reachable from the test machines, so the image is built
from this machine's own binaries (bash, the tools the tests call, ``ps``,
``stty``, and the Python interpreter running the tests with a trimmed standard
library) and imported with ``podman import``. The container runs with
``--runtime runc`` and two explicit ulimits (podman's default crun refuses
cgroup v1 hybrid mode; the VM's hard limits are below podman's defaults), on
the host's network (a job's server is reachable on 127.0.0.1, as over ssh to
localhost) and with the tests' temp directory mounted at the same path, so a
``cwd`` or file a test names exists on both sides. It has its own pid
namespace: the remote bash is not visible in the host's /proc by its pid.

Every container and image is named ``dsh-test-<pid>-<random>`` after the
pytest process that made it: teardown removes both and checks nothing is
left; a session start removes those of a run that died (its pid is gone).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

PREFIX = "dsh-test-"
TOOLS = (
    "bash sh ls cat sleep seq stty env id ps tty echo printf mkdir rm rmdir touch tr grep head tail wc "
    "timeout true false sed kill cp mv pwd uname readlink dirname basename sort date chmod ln expr yes "
    "test [ cut tee"
).split()
#: Standard library parts no test uses (keeps the image near 50 MB, most of it libpython).
STDLIB_SKIP = {
    "test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "pydoc_data", "distutils",
    "site-packages", "dist-packages", "__pycache__",
}  # fmt: skip
RUN_OPTIONS = ["--runtime", "runc", "--ulimit", "nofile=20000:20000", "--ulimit", "nproc=4096:4096"]


def podman(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout, check=check)


def _names(kind: str) -> list[str]:
    """Our containers (``ps``) or images (``images``) by name, any state."""
    if kind == "ps":
        out = podman("ps", "-a", "--format", "{{.Names}}").stdout
        return [n for n in out.split() if n.startswith(PREFIX)]
    out = podman("images", "--format", "{{.Repository}}:{{.Tag}}").stdout
    return [n for n in out.split() if n.startswith("localhost/" + PREFIX)]


def leftovers() -> list[str]:
    """Test containers and images that still exist (of any run)."""
    return _names("ps") + _names("images")


def _owner_gone(name: str) -> bool:
    pid = name.removeprefix("localhost/").removeprefix(PREFIX).split("-", 1)[0]
    return not pid.isdigit() or not os.path.exists(f"/proc/{pid}")


def sweep_dead_runs() -> None:
    """Remove containers and images of test runs that died before their
    teardown (an interrupted run); those of a live run are left alone."""
    for name in _names("ps"):
        if _owner_gone(name):
            podman("rm", "-f", "-t", "0", name, check=False)
    for image in _names("images"):
        if _owner_gone(image):
            podman("rmi", "-f", image, check=False)


def _copy(src: str, root: Path, dest: str | None = None) -> None:
    target = root / (dest or src).lstrip("/")
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(src, target, follow_symlinks=True)


def _copy_with_libs(binary: str, root: Path, dest: str | None = None) -> None:
    _copy(binary, root, dest)
    out = subprocess.run(["ldd", os.path.realpath(binary)], capture_output=True, text=True).stdout
    for word in out.split():
        if word.startswith("/"):
            _copy(word, root)


def _copy_python(root: Path) -> None:
    """The interpreter running the tests, at its own path (a test may name
    ``sys.executable``), with its shared libraries and standard library, and
    ``python3`` on the container's PATH."""
    exe = os.path.realpath(sys.executable)
    _copy_with_libs(exe, root)
    for path in {sys.executable, os.path.join(os.path.dirname(sys.executable), "python3")}:
        link = root / path.lstrip("/")
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(exe)
    if not (root / "usr/bin/python3").exists():
        (root / "usr/bin/python3").symlink_to(exe)
    stdlib = Path(sysconfig.get_path("stdlib"))
    for dirpath, dirnames, filenames in os.walk(stdlib):
        dirnames[:] = [d for d in dirnames if d not in STDLIB_SKIP and not d.startswith("config-")]
        for f in filenames:
            src = os.path.join(dirpath, f)
            if f.endswith(".so"):
                _copy_with_libs(src, root)
            elif f.endswith(".py"):
                _copy(src, root)


def build_rootfs(root: Path) -> None:
    """A minimal root file system from this machine's binaries."""
    for tool in TOOLS:
        path = shutil.which(tool, path="/usr/bin:/bin")
        if path:
            _copy_with_libs(path, root, path)
    _copy_python(root)
    for d in ("etc", "tmp", "proc", "dev", "root", "sys"):
        (root / d).mkdir(exist_ok=True)
    (root / "tmp").chmod(0o1777)
    (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
    (root / "etc/group").write_text("root:x:0:\n")


def unusable() -> str | None:
    """Why podman cannot run a container here, or None."""
    if shutil.which("podman") is None:
        return "podman is not installed"
    if shutil.which("runc") is None:
        return "runc is not installed (podman's default crun does not run on cgroup v1 hybrid hosts)"
    return None


@dataclass
class Box:
    """One running test container and the image it was made from."""

    name: str
    image: str

    @property
    def target(self) -> str:
        return f"podman://{self.name}"

    def exec(self, *argv: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
        return podman("exec", self.name, *argv, timeout=timeout, check=False)

    def remove(self) -> None:
        """Remove container and image; fail if either (or a conmon of it) is left."""
        cid = podman("inspect", "--format", "{{.Id}}", self.name, check=False).stdout.strip()
        podman("rm", "-f", "-t", "0", self.name, check=False)
        podman("rmi", "-f", self.image, check=False)
        left = [n for n in leftovers() if self.name in n]
        assert not left, f"podman left {left}"
        if cid:
            ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True).stdout
            assert cid not in ps, f"a process of container {self.name} outlived it:\n{ps}"


def start_box(mounts: list[str]) -> Box:
    """Build the image, import it and start a container (``sleep``-held),
    with each of ``mounts`` bound at the same path. Skips when podman is
    missing or cannot start a container here (with podman's own words)."""
    why = unusable()
    if why:
        pytest.skip(why)
    sweep_dead_runs()
    name = f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    image = f"localhost/{name}:1"
    with tempfile.TemporaryDirectory(prefix="dsh-rootfs-") as tmp:
        root = Path(tmp)
        build_rootfs(root)
        tar = subprocess.Popen(["tar", "-C", tmp, "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(["podman", "import", "-", image], stdin=tar.stdout, capture_output=True, text=True)
        tar.stdout.close()  # type: ignore[union-attr]
        tar.wait()
    if imported.returncode != 0:
        pytest.skip(f"podman cannot import an image here: {imported.stderr.strip()[-300:]}")
    volumes = [a for m in mounts for a in ("-v", f"{m}:{m}")]
    run = podman(
        "run", "-d", "--name", name, *RUN_OPTIONS, "--network", "host", *volumes, image, "sleep", "infinity",
        check=False,
    )  # fmt: skip
    box = Box(name, image)
    if run.returncode != 0:
        box.remove()
        pytest.skip(f"podman cannot start a container here: {run.stderr.strip()[-300:]}")
    return box


@pytest.fixture(scope="session")
def podman_box(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Box]:
    """A running test container for the whole session, removed at the end."""
    box = start_box([str(tmp_path_factory.getbasetemp())])
    try:
        yield box
    finally:
        box.remove()


@pytest.fixture(scope="session")
def docker_name_for_podman(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A directory to put first on PATH in which ``docker`` is podman: the
    ``docker://`` client path, run through the same engine (no Docker daemon
    runs on the test machines). Made in the tests' temp dir, never installed."""
    d = tmp_path_factory.mktemp("docker-name")
    podman_path = shutil.which("podman")
    if podman_path is None:
        pytest.skip("podman is not installed")
    (d / "docker").symlink_to(podman_path)
    yield str(d)
