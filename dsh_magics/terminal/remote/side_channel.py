"""The side channel: a second connection to where a remote terminal's bash
runs, which looks at its terminal from outside (never by typing on it: a
typed probe would land in a password prompt).

It is one long-lived ``sh`` reading one probe per line: a second ``exec``
into the same container or pod (docker, podman, kubectl), a second session
over the engine's own control connection (ssh without a login shell,
:mod:`.control_master`) or a connection of its own (ssh's login start);
``cmd:`` has one only when the user names its command (``--probe=``). A probe reads the
terminal's echo and canonical flags (``stty -a -F``), its foreground
process group (from ``/proc``) and where its members sleep (``wchan``).
It costs one round trip and runs only when a running job went quiet
(docs/remote.md, "Prompts and passwords"). It is opened by its first probe:
a terminal whose jobs never go quiet never starts it."""

from __future__ import annotations

import os
import re
import secrets
import shlex
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ..core import fdwait
from ..core.watchdog import SSH_PREFIX
from .inband import INPUT_FD
from .targets import NO_MUX, Target, control_options

ENV_SIDE_CHANNEL = "DSH_MAGICS_SIDE_CHANNEL"
"""``0`` turns the side channel off (prompts of remote jobs are then unknown)."""
PROBE_TIMEOUT_S = 5.0
OPEN_TIMEOUT_S = 30.0
"""The first answer of a channel also waits for its start: the channel opens
at its first probe, and a session over ssh first runs the user's shell and
rc file (a loaded machine has taken seconds)."""
SIDE_LOG = "side-log"
"""What a login start's side channel, a connection of its own, logs (``-E``)."""
TTY_READ_WCHANS = frozenset({"wait_woken", "n_tty_read", "ttyin"})
"""Where a process asleep in a read of a terminal sleeps (Linux, BSD)."""
POLL_WCHANS = frozenset({"do_sys_poll", "poll_schedule_timeout", "do_select", "core_sys_select", "ep_poll", "do_epoll_wait"})
"""Where a line editor (readline) waits for a key, in raw mode."""
_TTY = re.compile(r"^/dev/(?:pts/[0-9]{1,6}|tty[A-Za-z0-9]{1,8})$")

# One line of POSIX sh: the terminal's local flags; the shell itself (its
# state, where it sleeps, the terminal's foreground group, and how many
# close-on-exec copies of its terminal it holds besides its own fd 255:
# bash keeps fd 0 aside that way while a redirection is in force, which is
# all the time a job's command runs and never at its prompt); then one line
# per member of the foreground group (in the shell's session, which an ssh
# terminal's wrapper leads, not the shell): pid state wchan copy comm, where copy
# is 1 for a forked copy of the shell that has not exec-ed yet (the shell's
# executable and argv).
_PROBE = (
    "t={tty}; s={pid}; "
    "f=$(stty -a -F \"$t\" 2>/dev/null || stty -a -f \"$t\" 2>/dev/null) || f=; "
    "e=echo; case \" $f \" in *' -echo '*) e=-echo;; esac; "
    "c=icanon; case \" $f \" in *' -icanon '*) c=-icanon;; esac; "
    "[ -n \"$f\" ] || e=unknown; echo \"F $e $c\"; "
    "l=; read -r l </proc/$s/stat 2>/dev/null; r=${{l##*) }}; set -- $r; g=${{6:-0}}; a=${{1:-?}}; h=${{4:-}}; "
    "w=; read -r w </proc/$s/wchan 2>/dev/null; k=0; "
    "for x in /proc/$s/fd/*; do n=${{x##*/}}; [ \"$n\" != 255 ] && [ \"$x\" -ef \"$t\" ] || continue; "
    "o=; while read -r y z; do [ \"$y\" = flags: ] && o=$z; done </proc/$s/fdinfo/$n 2>/dev/null; "
    "case $o in *[2367]??????) k=$((k+1));; esac; done; "
    "[ -e /proc/$s/fd/0 ] || k=-1; echo \"S $a ${{w:-0}} $g $k\"; v=; "
    "for d in /proc/[0-9]*; do l=; read -r l <$d/stat 2>/dev/null || continue; "
    "n=${{l#*\\(}}; n=${{n%\\)*}}; r=${{l##*) }}; set -- $r; "
    "[ \"${{3:-}}\" = \"$g\" ] && [ \"${{4:-}}\" = \"$h\" ] || continue; "
    "w=; read -r w <$d/wchan 2>/dev/null; p=0; "
    "if [ \"$d\" != /proc/$s ] && [ $d/exe -ef /proc/$s/exe ]; then "
    "[ -n \"$v\" ] || v=$(tr '\\000' ' ' </proc/$s/cmdline 2>/dev/null); "
    "[ \"$(tr '\\000' ' ' <$d/cmdline 2>/dev/null)\" != \"$v\" ] || p=1; fi; "
    "echo \"P ${{d#/proc/}} $1 ${{w:-0}} $p $n\"; done; "
    "echo {end}"
)
WAIT_WCHANS = frozenset({"do_wait", "kernel_wait4"})
"""Where a shell waiting for its foreground command sleeps."""


@dataclass(frozen=True)
class Seen:
    """What one probe saw. ``echo`` is None when ``stty`` could not read the
    terminal; ``shell`` is (state, wchan, foreground group, copies of its
    terminal set aside, -1 when unknown)."""

    shell_pid: int
    echo: bool | None
    icanon: bool
    shell: tuple[str, str, int, int] | None
    members: tuple[tuple[int, str, str, bool, str], ...]  # (pid, state, wchan, copy, comm) of the foreground group

    def outside_job(self) -> bool:
        """The shell has the terminal and no redirection of a job's command
        is in force: whatever it reads is its own next line (a job's builtin
        ``read`` sleeps the same way, but with fd 0 set aside)."""
        return self.shell is not None and self.shell[2] == self.shell_pid and self.shell[3] == 0

    def at_prompt(self) -> bool:
        """The shell reads its own next line: outside a job, asleep in a
        read of the terminal."""
        if self.shell is None:
            return False
        state, wchan, _, _ = self.shell
        return self.outside_job() and state == "S" and _base(wchan) in TTY_READ_WCHANS

    def prompt_verdict(self) -> bool | None:
        """Is the shell at its own prompt? True; False when it is not, or not
        yet (see ``in_job``); None when this probe cannot tell (no view of
        the shell's state or descriptors)."""
        if self.shell is None or self.shell[3] < 0:
            return None
        return self.at_prompt()

    def in_job(self) -> bool:
        """Certainly not at its prompt: a redirection of a job's command is
        in force, or another process group has the terminal."""
        return self.shell is not None and (self.shell[3] > 0 or self.shell[2] != self.shell_pid)

    def launched(self) -> bool:
        """The shell has finished starting its foreground command: it waits
        for it (or reads the terminal), and no member of the foreground group
        is still a forked copy of the shell that has not ``exec``-ed (such a
        copy still runs bash's SIGINT handler, and loses a Ctrl-C)."""
        if self.shell is None or any(copy for _, _, _, copy, _ in self.members):
            return False
        state, wchan, _, _ = self.shell
        return state == "S" and (_base(wchan) in WAIT_WCHANS or _base(wchan) in TTY_READ_WCHANS | POLL_WCHANS)

    def reader(self) -> tuple[int, str] | None:
        """The foreground process waiting for the terminal: asleep in a tty
        read, or (raw mode, a line editor) in poll/select. Not the shell at
        its own prompt (a job's line that was just abandoned)."""
        for pid, state, wchan, _, comm in self.members:
            if state != "S":
                continue
            if pid == self.shell_pid and self.outside_job():
                continue  # read a moment apart: the shell line may still show it running
            wchan = _base(wchan)
            if wchan in TTY_READ_WCHANS or (not self.icanon and wchan in POLL_WCHANS):
                return pid, comm
        return None


def _base(wchan: str) -> str:
    return wchan.split(".", 1)[0]  # poll_schedule_timeout.constprop.0: a compiler's copy


def probe_argv(target: Target, control_dir: str | None, login: bool = False) -> list[str] | None:
    """The local command line of the second channel, or None (``cmd:``
    without ``--probe=``, or turned off with ``DSH_MAGICS_SIDE_CHANNEL=0``).
    ssh: a session over the terminal's connection (its ssh is the master),
    or with ``login`` (the terminal's ssh runs the login shell and is no
    master: ``Target.starts_login_shell``) a connection of its own."""
    if not enabled():
        return None
    sh = ["sh"]
    if target.kind == "ssh":
        if control_dir is None:
            return None
        if target.starts_login_shell(login):  # (its log names the private directory: tests find it by that)
            return [*target.ssh_argv("-T", NO_MUX, log=os.path.join(control_dir, SIDE_LOG)), "exec sh"]
        # a session over the engine's control connection, with no terminal
        return [*target.ssh_argv("-T", control_options(control_dir, master=False)), "exec sh"]
    if target.kind in ("docker", "podman"):
        return [target.kind, "exec", "-i", target.container or "", *sh]
    if target.kind == "kubectl":
        return [*target.kubectl_exec("-i"), "--", *sh]
    if target.kind == "cmd" and target.probe:
        return list(target.probe)
    return None


def enabled() -> bool:
    return os.environ.get(ENV_SIDE_CHANNEL, "").strip() != "0"


def new_control_dir() -> str:
    """The terminal's private directory (the owner watchdog removes it if
    the owner dies: ``core.watchdog``, whose guard knows the prefix)."""
    return tempfile.mkdtemp(prefix=SSH_PREFIX)


def remove_control_dir(path: str | None) -> None:
    if path:
        shutil.rmtree(path, ignore_errors=True)


class SideChannel:
    """The long-lived second channel of one remote terminal. ``probe`` is
    called from one watcher thread at a time; ``probes`` counts round trips.
    Its process starts at the first probe (or the first ``hang_up``): lazily,
    so that a terminal that never needs it costs no second session."""

    def __init__(self, argv: list[str]) -> None:
        self._argv = argv
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()  # one probe at a time
        self._life = threading.Lock()  # start vs close
        self._closed = False
        self._buf = b""
        self._answered = False  # the channel has answered once: it is up
        self.probes = 0
        self.broken: str | None = None

    @property
    def pid(self) -> int | None:
        """The local process of the channel (ssh, podman, ...), once started."""
        proc = self._proc
        return proc.pid if proc is not None else None

    def _start(self) -> subprocess.Popen[bytes]:
        with self._life:
            if self._closed:
                raise OSError("the side channel is closed")
            if self._proc is None:
                self._proc = subprocess.Popen(
                    self._argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
                # A first line to spare: an rc file that reads a line from
                # stdin (sshd's bash sources ~/.bashrc for a command) takes
                # this one, not the first probe, which would wait out
                # OPEN_TIMEOUT_S; a shell that reads none runs ``:``
                # (tests/reliability/test_hostile_startup.py, read-from-stdin cases).
                assert self._proc.stdin is not None
                self._proc.stdin.write(b":\n")
                self._proc.stdin.flush()
            return self._proc

    def probe(self, tty: str, shell_pid: int) -> Seen | None:
        """One round trip; None when the channel does not answer (then it
        is marked broken and not used again)."""
        if not _TTY.match(tty) or self.broken:
            return None
        out = self._ask(lambda end: _PROBE.format(tty=shlex.quote(tty), pid=int(shell_pid), end=end), "the probe")
        if out is None:
            return None
        self.probes += 1  # (answered probes: tests wait on the count)
        return _parse(out, shell_pid)

    def locate(self, shell_pid: int) -> str | None:
        """The terminal the remote shell keeps on its descriptor
        ``INPUT_FD`` (its own terminal, set aside at start-up), as a path;
        None when it cannot be named. One round trip, at the channel's
        first use: the shell no longer runs ``tty`` at every start for it
        (issue 35 §5). The ptys are compared with ``-ef`` by the ``sh``
        itself; ``readlink`` only where none of them is it."""
        if self.broken:
            return None
        fd = f"/proc/{int(shell_pid)}/fd/{INPUT_FD}"
        out = self._ask(
            lambda end: (
                f't=; for x in /dev/pts/[0-9]*; do [ "$x" -ef {fd} ] && t=$x && break; done; '
                f'[ -n "$t" ] || t=$(readlink {fd} 2>/dev/null); echo "T $t"; echo {end}'
            ),
            "the side channel",
        )
        said = [ln[2:].strip() for ln in (out or "").splitlines() if ln.startswith("T ")]
        return said[-1] if said and _TTY.match(said[-1]) else None

    def _ask(self, script: Callable[[str], str], what: str) -> str | None:
        """One round trip: ``script(end)`` (which ends by echoing ``end``, a
        fresh nonce) written to the channel's shell, and what it printed up
        to ``end``; None when it does not answer (the channel is then marked
        broken, naming ``what`` asked)."""
        end = "DSH_END_" + secrets.token_hex(8)
        with self._lock:
            try:
                proc = self._start()
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write((script(end) + "\n").encode())
                proc.stdin.flush()
                out = self._read_until(proc.stdout.fileno(), end.encode())
            except (OSError, ValueError) as e:
                self.broken = str(e)
                return None
        if out is None:
            self.broken = f"{what} did not answer"
            return None
        return out.decode("utf-8", "replace")

    def hang_up(self, tty: str, shell_pid: int) -> bool:
        """SIGHUP to the remote shell, as a closing terminal sends it: bash
        hangs up its jobs (the foreground one too) and exits. For a close
        while a job runs where ending the client does not reach the remote
        side (a container's exec session). Only to a process whose fd 255
        (where bash keeps its terminal) is that terminal: a probe command
        that reaches another place (``cmd:--probe=``) signals nothing there.
        False when the channel cannot say it was sent."""
        if self.broken or not _TTY.match(tty):
            return False
        end = "DSH_END_" + secrets.token_hex(8)
        pid = int(shell_pid)
        line = f"[ /proc/{pid}/fd/255 -ef {shlex.quote(tty)} ] && kill -HUP {pid} 2>/dev/null; echo {end}\n"
        with self._lock:
            try:
                proc = self._start()  # (no probe may have started it yet)
                assert proc.stdin is not None and proc.stdout is not None
                proc.stdin.write(line.encode())
                proc.stdin.flush()
                return self._read_until(proc.stdout.fileno(), end.encode()) is not None
            except (OSError, ValueError):
                return False

    def _read_until(self, fd: int, end: bytes) -> bytes | None:
        deadline = time.monotonic() + (PROBE_TIMEOUT_S if self._answered else OPEN_TIMEOUT_S)
        while end + b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not fdwait.readable([fd], left):
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buf += chunk
        out, _, self._buf = self._buf.partition(end + b"\n")
        self._answered = True
        return out

    def close(self, grace: float = 2.0) -> None:
        """End the channel: its ``sh`` reads the end of its input and exits,
        and its client with it; a client still there after ``grace`` seconds
        is ended. Later probes answer None."""
        with self._life:
            self._closed = True
            proc, self._proc = self._proc, None
        if proc is None:
            return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass  # its shell is already gone: closing its input changes nothing
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        # a probe on its way has read the end of the output by now; then its descriptor goes
        if proc.stdout is not None and self._lock.acquire(timeout=PROBE_TIMEOUT_S):
            try:
                proc.stdout.close()
            finally:
                self._lock.release()


def _parse(text: str, shell_pid: int) -> Seen | None:
    echo: bool | None = None
    icanon = True
    shell: tuple[str, str, int, int] | None = None
    members = []
    seen_flags = False
    for line in text.splitlines():
        parts = line.split(" ", 5)
        if parts[0] == "F" and len(parts) >= 3:
            seen_flags = True
            echo = None if parts[1] == "unknown" else parts[1] == "echo"
            icanon = parts[2] == "icanon"
        elif parts[0] == "S" and len(parts) == 5 and parts[3].isdigit() and parts[4].lstrip("-").isdigit():
            shell = (parts[1], parts[2], int(parts[3]), int(parts[4]))
        elif parts[0] == "P" and len(parts) == 6 and parts[1].isdigit():
            members.append((int(parts[1]), parts[2], parts[3], parts[4] == "1", parts[5]))
    if not seen_flags:
        return None
    return Seen(shell_pid, echo, icanon, shell, tuple(members))
