"""Who can reach a host: only its own uid, only over its private socket.

Two layers, each tested on its own: the 0700 runtime directory (and 0600
socket) keep other users from even connecting; the host's SO_PEERCRED check
refuses a peer of another uid even when the filesystem would let it in."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile

import psutil
import pytest

from dsh_magics.host import HostClient, HostPaths

from .conftest import stop_everything

NOBODY = 65534

# Imports happen before the switch: /root (where the interpreter lives) is
# closed to nobody. The client then runs as nobody against `path`.
_AS_NOBODY = r"""
import json, os, sys
from dsh_magics.errors import DshError
from dsh_magics.host import HostClient, HostPaths
from dsh_magics.host import lifecycle, protocol  # noqa: F401 - loaded before setuid
directory, name = sys.argv[1], sys.argv[2]
os.setgroups([])
os.setgid(65534)
os.setuid(65534)
client = HostClient(HostPaths(directory, name), autostart=False)
try:
    client.connect()
    print(json.dumps({"connected": True}))
except DshError as e:
    print(json.dumps({"code": e.code, "message": e.message}))
"""


def _as_nobody(directory: str, name: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _AS_NOBODY, directory, name], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


pytestmark = pytest.mark.skipif(os.getuid() != 0, reason="switching to another uid needs root")


@pytest.fixture(scope="module")
def served():
    outer = tempfile.mkdtemp(prefix="dshsec-", dir="/tmp")
    os.chmod(outer, 0o755)
    inner = os.path.join(outer, "h")
    client = HostClient(HostPaths.for_name("sec", inner))
    client.connect()
    try:
        yield outer, inner, client
    finally:
        client.detach()
        stop_everything(inner)
        shutil.rmtree(outer, ignore_errors=True)


def test_files_are_private(served) -> None:
    _, inner, client = served
    assert stat.S_IMODE(os.stat(inner).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(client.paths.socket).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(client.paths.info).st_mode) == 0o600


def test_another_uid_cannot_reach_the_socket(served) -> None:
    _, inner, _ = served
    got = _as_nobody(inner, "sec")
    assert got["code"] == "HOST_UNAVAILABLE" and "Permission denied" in got["message"], got


def test_another_uid_is_refused_by_the_host_itself(served) -> None:
    """Open the filesystem layer on purpose (a world-writable hard link to
    the socket in a world-readable directory): the peer connects, and the
    host's uid check refuses it."""
    outer, _, client = served
    link = os.path.join(outer, "peer.sock")
    os.link(client.paths.socket, link)
    mode = os.stat(link).st_mode
    os.chmod(link, 0o666)  # same inode: the real socket too, for this test only
    try:
        got = _as_nobody(outer, "peer")
    finally:
        os.chmod(client.paths.socket, stat.S_IMODE(mode))
        os.unlink(link)
    assert got.get("code") == "HOST_UNAVAILABLE", got
    assert f"uid {NOBODY}" in got["message"] and "refused" in got["message"], got
    assert "refused a connection" in open(client.paths.log).read()
    # The host is unharmed and still serves its owner.
    assert client.exec("sec-after", "echo ok", wait_ms=10_000).output == "ok\n"


def test_no_network_listener(served) -> None:
    _, _, client = served
    host = psutil.Process(client.host_info()["pid"])
    assert host.net_connections(kind="inet") == []
    unix = [c for c in host.net_connections(kind="unix") if c.laddr == client.paths.socket]
    assert unix, "the host should listen on its Unix socket"


# -- a real second user (issue 32 §5): created for these tests, removed after -----------
_RAW_HELLO = r"""
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print(json.dumps({"connect": type(e).__name__}))
    sys.exit(0)
try:
    s.sendall(json.dumps({"v": int(sys.argv[2]), "id": 1, "op": "hello", "args": {}}).encode() + b"\n")
except (BrokenPipeError, ConnectionResetError):
    pass  # refused and closed at once: the reason is still there to read
data = b""
while not data.endswith(b"\n"):
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
print(json.dumps({"reply": json.loads(data) if data.strip() else None}))
"""


@pytest.fixture(scope="module")
def second_user():
    """A throwaway system user (no home, no shell), deleted at the end."""
    if shutil.which("useradd") is None or shutil.which("userdel") is None:
        pytest.skip("useradd/userdel are not installed")
    name = f"dshsec{os.getpid() % 100000}"
    subprocess.run(["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        import pwd

        yield name, pwd.getpwnam(name).pw_uid, pwd.getpwnam(name).pw_gid
    finally:
        subprocess.run(["userdel", name], check=True)


def _connect_as(argv_prefix: list[str], path: str) -> dict:
    """Connect to ``path`` and say hello as another user, with the system's
    python (the test's interpreter lives under /root, closed to others)."""
    from dsh_magics.host import protocol as P

    out = subprocess.run(
        [*argv_prefix, "/usr/bin/python3", "-c", _RAW_HELLO, path, str(P.VERSION)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3"), reason="no system python for the second user")
def test_a_second_users_connection_is_refused(served, second_user) -> None:
    outer, _, client = served
    name, uid, gid = second_user
    # Through the private directory: the filesystem refuses (runuser).
    got = _connect_as(["runuser", "-u", name, "--"], client.paths.socket)
    assert got == {"connect": "PermissionError"}, got
    # Through a world-writable link to the socket: the host itself refuses (setpriv).
    link = os.path.join(outer, "second.sock")
    os.link(client.paths.socket, link)
    mode = os.stat(link).st_mode
    os.chmod(link, 0o666)  # same inode: the real socket too, for this test only
    try:
        got = _connect_as(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"], link)
    finally:
        os.chmod(client.paths.socket, stat.S_IMODE(mode))
        os.unlink(link)
    reply = got.get("reply") or {}
    assert reply.get("ok") is False and reply["error"]["code"] == "HOST_UNAVAILABLE", got
    assert f"uid {uid}" in reply["error"]["message"], got
    assert client.exec("sec-second", "echo ok", wait_ms=10_000).output == "ok\n"
