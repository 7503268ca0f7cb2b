"""A real OpenSSH server on 127.0.0.1 for the tests that reach ssh targets.

Throwaway host and user keys live in a temp dir; ssh reads only the config
files written there (``-F``, passed through ``DSH_MAGICS_SSH_OPTIONS``), so
nothing of the machine's ~/.ssh is read or written. Skipped only when
``/usr/sbin/sshd`` (or ``ssh``/``ssh-keygen``) is missing.

The ``sshd`` fixture is one server for the whole session: tests/conftest.py
imports it, and no other module may (a second import is a second fixture of
the same name, so a second server, and the last one started would own
``DSH_MAGICS_SSH_OPTIONS``). Tests that need a server of their own (a
private HOME, one to stop) call :func:`start_sshd`, or one of the two
generators built on it for a module fixture: :func:`sshd_with_home` (every
session gets one private HOME, never this machine's own: its profile runs
pyenv) and :func:`sshd_for_users` (sessions keep their user's own HOME: for
:func:`throwaway_user`, a user whose login shell is any shell).
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from dsh_magics.terminal.core.procs import alive, descendants
from dsh_magics.terminal.remote.targets import ENV_SSH_OPTIONS
from tests.procinfo import comm, ppid

SSHD = "/usr/sbin/sshd"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)
    return path.with_suffix(".pub").read_text().strip()


@dataclass
class Sshd:
    """One sshd and the files a client needs to reach it."""

    dir: Path
    port: int
    proc: subprocess.Popen
    host_pub: str

    @property
    def target(self) -> str:
        return self.target_for(os.environ.get("USER") or "root")

    def target_for(self, user: str) -> str:
        return f"ssh://{user}@127.0.0.1:{self.port}"

    def client_config(self, name: str, *, key: str = "id_user", known: str | None = None) -> str:
        """Write a client config; ``known`` is the known_hosts text (default:
        the server's real host key). Returns ssh options selecting it."""
        known_path = self.dir / f"known_{name}"
        text = f"[127.0.0.1]:{self.port} {self.host_pub}\n" if known is None else known
        known_path.write_text(text)
        cfg = self.dir / f"ssh_config_{name}"
        cfg.write_text(
            "Host *\n"
            f"  UserKnownHostsFile {known_path}\n"
            "  GlobalKnownHostsFile /dev/null\n"
            f"  IdentityFile {self.dir / key}\n"
            "  IdentitiesOnly yes\n"
            "  IdentityAgent none\n"
            "  StrictHostKeyChecking yes\n"
            "  ControlMaster no\n"
            "  ControlPath none\n"
        )
        return f"-F {cfg}"

    def connection_of(self, pid: int) -> list[int]:
        """The sshd processes of the connection that ``pid`` (a remote shell)
        runs under: the listener's child above it, then that child's sshd
        descendants (a session's child before it runs the shell). Found from
        the shell up, not as the processes new since an earlier look: this
        server is the whole session's, and another connection to it (one
        still closing, a side channel's own) may start or end meanwhile."""
        while (parent := ppid(pid)) != self.proc.pid:
            assert parent is not None and parent > 1, f"process {pid} does not run under this sshd"
            pid = parent
        return [pid, *(p for p in descendants(pid) if comm(p).startswith("sshd"))]

    def stop(self) -> None:
        """Hang up first, kill later: a session may still be in ~/.bashrc
        (sshd's bash reads it), and a SIGKILL there can leave pyenv's rehash
        lock behind (tests/conftest.py checks that none is left)."""
        from tests.conftest import wait_until  # (tests/conftest.py imports this module)

        tree = [self.proc.pid, *descendants(self.proc.pid)]
        for pid in tree:
            # the listener would re-exec on SIGHUP; it ends on SIGTERM
            for sig in (signal.SIGCONT, signal.SIGTERM if pid == self.proc.pid else signal.SIGHUP):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass
        try:
            wait_until(lambda: not any(alive(p) for p in tree), timeout=3, msg="sshd tree hung up")
        except AssertionError:
            for pid in tree:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        wait_until(lambda: not any(alive(p) for p in tree), timeout=10, msg="sshd tree did not die")


def start_sshd(base: Path, env: dict[str, str] | None = None) -> Sshd:
    """A new sshd; ``env``: more variables for its sessions (``SetEnv``,
    which wins over sshd's own: ``HOME`` gives them a private home)."""
    from tests.conftest import wait_until  # (tests/conftest.py imports this module)

    for tool in (SSHD, shutil.which("ssh"), shutil.which("ssh-keygen")):
        if not tool or not os.access(tool, os.X_OK):
            pytest.skip(f"OpenSSH is not installed ({tool or 'ssh/ssh-keygen'} missing)")
    os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # privilege separation dir
    base.mkdir(parents=True, exist_ok=True)
    host_pub = _keygen(base / "host_key")
    user_pub = _keygen(base / "id_user")
    _keygen(base / "id_other")
    (base / "authorized_keys").write_text(user_pub + "\n")
    port = _free_port()
    cfg = base / "sshd_config"
    cfg.write_text(
        f"Port {port}\n"
        "ListenAddress 127.0.0.1\n"
        f"HostKey {base / 'host_key'}\n"
        f"AuthorizedKeysFile {base / 'authorized_keys'}\n"
        "StrictModes no\n"
        "UsePAM no\n"
        "PidFile none\n"
        "PermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\n"
        "KbdInteractiveAuthentication no\n"
        "PrintMotd no\n"
        "PrintLastLog no\n"
        "MaxStartups 100\n"
        "MaxSessions 100\n"
        "LogLevel ERROR\n"
        # sshd runs every session through the user's shell with -c, and bash
        # then reads ~/.bashrc; here that runs `pyenv init`, whose rehash
        # waits 60 s on a lock file a killed shell left behind (see
        # tests/conftest.py). Sessions get the tests' short timeout.
        f"SetEnv PYENV_REHASH_TIMEOUT={os.environ.get('PYENV_REHASH_TIMEOUT', '1')}"
        + "".join(f" {k}={v}" for k, v in (env or {}).items())
        + "\n"
    )
    log = open(base / "sshd.log", "wb")
    proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(cfg)], stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    log.close()

    def listening() -> bool:
        if proc.poll() is not None:
            raise AssertionError(f"sshd exited: {(base / 'sshd.log').read_text()}")
        with socket.socket() as s:
            return s.connect_ex(("127.0.0.1", port)) == 0

    wait_until(listening, timeout=10, msg="sshd did not listen")
    return Sshd(base, port, proc, host_pub)


@pytest.fixture(scope="session")
def sshd(tmp_path_factory) -> Iterator[Sshd]:
    server = start_sshd(tmp_path_factory.mktemp("sshd"))
    old = os.environ.get(ENV_SSH_OPTIONS)
    os.environ[ENV_SSH_OPTIONS] = server.client_config("default")
    yield server
    if old is None:
        os.environ.pop(ENV_SSH_OPTIONS, None)
    else:
        os.environ[ENV_SSH_OPTIONS] = old
    server.stop()


def sshd_with_home(factory: pytest.TempPathFactory, name: str) -> Iterator[tuple[Sshd, Path]]:
    """A server of its own whose sessions all get one private HOME (``SetEnv
    HOME``), yielded with that home, stopped at the end: for a module
    fixture (``yield from sshd_with_home(tmp_path_factory, "login")``)."""
    home = factory.mktemp(f"{name}-home")
    server = start_sshd(factory.mktemp(f"{name}-sshd"), env={"HOME": str(home)})
    try:
        yield server, home
    finally:
        server.stop()


def sshd_for_users() -> Iterator[Sshd]:
    """A server of its own for :func:`throwaway_user`\'s users: sessions keep
    their user's own HOME, and its directory is one such a user may enter
    (sshd reads the authorized keys as the user). Removed at the end."""
    base = Path(tempfile.mkdtemp(prefix="dsh-test-fan-sshd-"))
    base.chmod(0o755)
    try:
        server = start_sshd(base)
        (base / "authorized_keys").chmod(0o644)
        try:
            yield server
        finally:
            server.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)


USER_PREFIX = "dsh-test-fan-"
"""Throwaway users are ``dsh-test-fan-TAG-PID``: PID is the test run's, so a
later run can tell the users of a run that died (:func:`sweep_dead_users`)."""


@contextmanager
def throwaway_user(tag: str, shell: str) -> Iterator[tuple[str, Path]]:
    """A user ``dsh-test-fan-TAG-PID`` whose login shell is ``shell``, with
    an empty home of its own (outside pytest's 0700 directory), removed with
    it at the end; any server's one authorized key lets it in
    (:func:`sshd_for_users`). Skips unless root with ``useradd``, or when
    ``shell`` is not installed. No change to root's own shell or home.

    The end leaves nothing of the user, whatever the test did (a failed
    assertion with its terminal still open included): its processes get 10 s
    to end (a session's sshd still ending), then SIGKILL; then ``userdel``,
    the home, and whatever the uid owns directly under /tmp (fish, with no
    ``XDG_RUNTIME_DIR`` from a PAM-less sshd, makes ``/tmp/fish.USER``). It
    then checks that none of these is left (:func:`leftovers_of`), and fails
    if one is. Users of a run that died first are removed at the start."""
    if os.geteuid() != 0 or shutil.which("useradd") is None:
        pytest.skip("needs root and useradd to make a user with a login shell of its own")
    if not os.access(shell, os.X_OK):
        pytest.skip(f"{shell} is not installed")
    sweep_dead_users()
    name = f"{USER_PREFIX}{tag}-{os.getpid()}"
    home = Path(tempfile.mkdtemp(prefix=f"{USER_PREFIX}{tag}-home-"))
    uid: int | None = None
    try:
        # '*': no password, and not locked (sshd refuses a locked account without PAM)
        subprocess.run(["useradd", "-M", "-d", str(home), "-s", shell, "-p", "*", name], check=True)
        entry = pwd.getpwnam(name)
        uid = entry.pw_uid
        os.chown(home, uid, entry.pw_gid)
        yield name, home
    finally:
        left: list[str] = []
        try:
            if uid is not None:
                left = _remove_user(name, uid, wait=10.0)
        finally:
            shutil.rmtree(home, ignore_errors=True)
    assert uid is not None
    left += leftovers_of(name, None)
    assert not left, f"user {name} left {left}"


def _remove_user(name: str, uid: int, *, wait: float) -> list[str]:
    """End the uid's processes (``wait`` seconds for them to go, then
    SIGKILL), remove what the uid owns directly under /tmp, then ``userdel``
    (which refuses a user with a process; "no such user", exit 6, is another
    run's sweep that came first). Returns the uid's processes and /tmp files
    still there before ``userdel``: after it, another run's ``useradd`` may
    get the same uid."""
    from tests.conftest import wait_until  # (tests/conftest.py imports this module)

    try:
        wait_until(lambda: not _processes_of(uid), timeout=wait, msg=f"processes of {name} left")
    except AssertionError:
        for pid in _processes_of(uid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        wait_until(lambda: not _processes_of(uid), timeout=10, msg=f"processes of {name} outlived SIGKILL")
    for path in _tmp_of(uid):
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    left = [f"pid {p}" for p in _processes_of(uid)] + [str(p) for p in _tmp_of(uid)]
    done = subprocess.run(["userdel", name], check=False)
    if done.returncode not in (0, 6):
        raise subprocess.CalledProcessError(done.returncode, done.args)
    return left


def _tmp_of(uid: int) -> list[Path]:
    """What ``uid`` owns directly under /tmp."""
    found = []
    for entry in os.scandir("/tmp"):
        try:
            if entry.stat(follow_symlinks=False).st_uid == uid:
                found.append(Path(entry.path))
        except FileNotFoundError:
            pass
    return found


def leftovers_of(name: str, uid: int | None) -> list[str]:
    """What is left of a removed user: its passwd entry, and with ``uid`` its
    processes and files directly under /tmp (only right after its removal:
    another run's ``useradd`` may get the uid again)."""
    left = [] if uid is None else [f"pid {p}" for p in _processes_of(uid)] + [str(p) for p in _tmp_of(uid)]
    try:
        pwd.getpwnam(name)
        left.append("its passwd entry")
    except KeyError:
        pass
    return left


def sweep_dead_users() -> None:
    """Remove the throwaway users (and their homes and /tmp files) of test
    runs that died before their clean-up; those of a live run stay."""
    for entry in pwd.getpwall():
        if not entry.pw_name.startswith(USER_PREFIX):
            continue
        pid = entry.pw_name.rsplit("-", 1)[-1]
        if pid.isdigit() and os.path.exists(f"/proc/{pid}"):
            continue
        _remove_user(entry.pw_name, entry.pw_uid, wait=0.0)
        home = Path(entry.pw_dir)
        if home.parent == Path(tempfile.gettempdir()) and home.name.startswith(USER_PREFIX):
            shutil.rmtree(home, ignore_errors=True)


def _processes_of(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                uids = next((line.split()[1:] for line in f if line.startswith("Uid:")), [])
        except OSError:
            continue
        if str(uid) in uids:
            found.append(int(entry))
    return found
