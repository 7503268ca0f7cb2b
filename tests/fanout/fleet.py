"""A fleet on this machine for the fan-out tests and benchmark: one sshd on
127.0.0.1 under many host aliases (an ssh config with one Host entry each),
podman containers named ``fanout-<pid>-...``, and ``cmd:`` targets."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

from tests.containers import TOOLS, _copy_with_libs, podman, unusable
from tests.sshd import Sshd, _free_port

BOX_PREFIX = "fanout-"


def ssh_aliases(
    sshd: Sshd, names: list[str], dead: tuple[str, ...] | list[str] = (), *, user: str | None = None
) -> str:
    """Write an ssh config where each of ``names`` is the test sshd and each
    of ``dead`` a port nothing listens on; the ssh options that select it.
    ``user``: the remote user (default: this one)."""
    options = sshd.client_config("fanout")
    cfg = Path(options.split(" ", 1)[1])
    user = user or os.environ.get("USER") or "root"
    closed = _free_port()
    blocks = "".join(f"Host {n}\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {user}\n" for n in names)
    blocks += "".join(f"Host {n}\n  HostName 127.0.0.1\n  Port {closed}\n  User {user}\n" for n in dead)
    # Host blocks first: ssh keeps the first value it finds for each option
    cfg.write_text(blocks + cfg.read_text())
    return options


@dataclass
class Boxes:
    """Running containers made from one small image; ``remove()`` removes all."""

    names: list[str]
    image: str

    def remove(self) -> None:
        for name in self.names:
            podman("rm", "-f", "-t", "0", name, check=False)
        podman("rmi", "-f", self.image, check=False)
        out = podman("ps", "-a", "--format", "{{.Names}}").stdout.split()
        left = [n for n in out if n in self.names]
        assert not left, f"podman left {left}"


def sweep_dead_boxes() -> None:
    """Containers and images of fan-out runs whose process is gone."""
    for name in podman("ps", "-a", "--format", "{{.Names}}").stdout.split():
        pid = name.removeprefix(BOX_PREFIX).split("-", 1)[0]
        if name.startswith(BOX_PREFIX) and pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            podman("rm", "-f", "-t", "0", name, check=False)
    for image in podman("images", "--format", "{{.Repository}}:{{.Tag}}").stdout.split():
        short = image.removeprefix("localhost/")
        pid = short.removeprefix(BOX_PREFIX).split("-", 1)[0]
        if short.startswith(BOX_PREFIX) and pid.isdigit() and not os.path.exists(f"/proc/{pid}"):
            podman("rmi", "-f", image, check=False)


def start_boxes(count: int) -> Boxes | str:
    """``count`` containers (bash and the shell tools only), or why not."""
    why = unusable()
    if why:
        return why
    sweep_dead_boxes()
    base = f"{BOX_PREFIX}{os.getpid()}-{uuid.uuid4().hex[:6]}"
    image = f"localhost/{base}:1"
    with tempfile.TemporaryDirectory(prefix="fanout-rootfs-") as tmp:
        root = Path(tmp)
        for tool in TOOLS:
            path = shutil.which(tool, path="/usr/bin:/bin")
            if path:
                _copy_with_libs(path, root, path)
        for d in ("etc", "tmp", "proc", "dev", "root", "sys"):
            (root / d).mkdir(exist_ok=True)
        (root / "tmp").chmod(0o1777)
        (root / "etc/passwd").write_text("root:x:0:0:root:/root:/bin/bash\n")
        (root / "etc/group").write_text("root:x:0:\n")
        tar = subprocess.Popen(["tar", "-C", tmp, "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(["podman", "import", "-", image], stdin=tar.stdout, capture_output=True, text=True)
        assert tar.stdout is not None
        tar.stdout.close()
        tar.wait()
    if imported.returncode != 0:
        return f"podman cannot import an image here: {imported.stderr.strip()[-300:]}"
    boxes = Boxes([], image)
    from tests.containers import RUN_OPTIONS

    for n in range(1, count + 1):
        name = f"{base}-{n}"
        run = podman("run", "-d", "--name", name, *RUN_OPTIONS, "--network", "host", image, "sleep", "infinity", check=False)
        boxes.names.append(name)
        if run.returncode != 0:
            boxes.remove()
            return f"podman cannot start a container here: {run.stderr.strip()[-300:]}"
    return boxes
