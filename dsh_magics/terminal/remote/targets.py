"""Where a remote terminal's bash runs (``ssh://``, ``docker://``, ``kubectl://``, ``cmd:``...), and the local argv that opens it.

Parsing is strict (``INVALID_ARGUMENT`` before anything starts); no part of a target reaches a local shell.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

from ...errors import InvalidArgument
from .. import validation as V
from ..core.procs import TOKEN_VAR
from .ssh_start import wrapped_shell

KINDS = ("ssh", "docker", "podman", "kubectl", "cmd")
ENV_TARGETS = "DSH_MAGICS_TARGETS"
ENV_SSH_OPTIONS = "DSH_MAGICS_SSH_OPTIONS"
ENV_SSH = "DSH_MAGICS_SSH"

# ssh defaults; options in DSH_MAGICS_SSH_OPTIONS come first on the command
# line, and ssh keeps the first value it sees, so they override these.
CONNECT_TIMEOUT_S = 10
ALIVE_INTERVAL_S = 10
ALIVE_COUNT = 3

CONTROL_SOCKET = "c"
"""The control socket's name in the terminal's private directory."""
CONTROL_LOG = "log"
"""What the connection's ssh processes log (``-E``), in the private
directory: why a start failed, and what the master said about the
connection later (a timeout, a reset). The terminal's PTY still gets ssh's
``Connection to ... closed.``"""

NO_REMOTE_COMMAND = ["-o", "RemoteCommand=none"]
"""The first option of every ssh the engine starts: a ``RemoteCommand`` of
the user's ssh config never runs in place of the engine's command or login
shell (a login start would otherwise type its first line into what that
command starts, a ``tmux attach`` say; tests/remote/test_targets.py). It
needs OpenSSH 7.6 or later (2017), which knows the option."""

NO_MUX = ["-o", "ControlMaster=no", "-o", "ControlPath=none"]
"""ssh options of a login start's terminal and of its side channel: no
control socket at all (a ``ControlMaster``/``ControlPersist`` of the user's
config never makes either a master, nor a client of one), so each ssh ends
with its own session (docs/remote.md, "The engine's ssh connection")."""

PROBE_OPTION = "--probe="
"""``cmd:--probe=PROBE ARGV``: PROBE starts a POSIX ``sh`` that reads lines on
its stdin, where the terminal's bash runs (same machine or container, same
user): the side channel of a ``cmd:`` target (docs/remote.md)."""

_HOST = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9._-]{0,252})$")
_USER = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}$")
_CONTAINER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,254}$")
_K8S_NAME = re.compile(r"^[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?$")
_K8S_CONTEXT = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:@+=-]{0,252}$")


@dataclass(frozen=True)
class Target:
    """A parsed target: its kind, the text it came from, and its parts."""

    kind: str
    text: str
    host: str | None = None
    user: str | None = None
    port: int | None = None
    container: str | None = None
    context: str | None = None
    namespace: str | None = None
    pod: str | None = None
    command: tuple[str, ...] = ()
    probe: tuple[str, ...] = ()  # cmd: the user's probe command (PROBE_OPTION), or none

    def __str__(self) -> str:
        return self.text

    @property
    def hands_modes(self) -> bool:
        """Does the client give the remote terminal the modes of its local
        one? ssh does (its pty-req carries them): the engine's PTY for it
        echoes, so the remote terminal echoes from its start and the set-up
        runs no ``stty`` there (``inband.setup_text``)."""
        return self.kind == "ssh"

    def starts_login_shell(self, login: bool) -> bool:
        """Does the terminal run no remote command, so that the server starts
        the user's login shell itself? ``ssh://`` with ``login``: the login
        shell then reads the profile (and, as Debian's does, ``~/.bashrc``)
        once, where ``bash -l -i`` run as a command had sshd's shell read
        ``~/.bashrc`` for the command first (issue 35 §5). The engine then
        types ``ssh_start.login_check`` before its set-up: a bash login shell
        stays, any other execs a wrapped ``bash -l -i``."""
        return self.kind == "ssh" and login

    def argv(
        self, login: bool = True, environ: dict[str, str] | None = None, control_dir: str | None = None,
        token: str | None = None,
    ) -> list[str]:
        """The local command line that opens an interactive bash there.

        ``login`` chooses ``bash -l -i`` (the user's profile runs, as in their
        own terminal) or ``bash --noprofile --norc -i``; over ssh a login
        start runs no remote command at all (``starts_login_shell``), and its
        ssh is no control master (``NO_MUX``): it ends with its one session,
        and the side channel is a connection of its own. ``control_dir``
        (ssh): the connection logs to a file there (``-E``); without
        ``login`` this ssh is the engine's own connection, the master of a
        control socket there, which the side channel's session shares, and
        bash runs under a wrapper that says when it has ended
        (``ssh_start.wrapped_shell``). ``token`` (docker, podman): the
        container's bash and its children carry it (``DSH_MAGICS_TOKEN``), so
        a dead owner's watchdog finds them there (``dead_owner``); its value
        comes from the client's environment (``Client.environment``), not
        from this argv, which any user may read."""
        env = os.environ if environ is None else environ
        bash = ["bash", "-l", "-i"] if login else ["bash", "--noprofile", "--norc", "-i"]
        if self.kind == "ssh":
            log = os.path.join(control_dir, CONTROL_LOG) if control_dir is not None else None
            if self.starts_login_shell(login):
                return self.ssh_argv("-tt", NO_MUX, env, log=log)
            control = control_options(control_dir, master=True) if control_dir is not None else []
            # The remote side runs this through the user's login shell with
            # -c; `exec` leaves bash (or the wrapper) alone on the session's terminal.
            remote = wrapped_shell(bash) if control_dir is not None else "exec " + " ".join(bash)
            return [*self.ssh_argv("-tt", control, env, log=log), remote]
        if self.kind in ("docker", "podman"):
            marked = ["-e", TOKEN_VAR] if token else []
            return [self.kind, "exec", "-it", "-e", "TERM=dumb", *marked, self.container or "", *bash]
        if self.kind == "kubectl":
            return [*self.kubectl_exec("-it"), "--", *bash]
        return list(self.command)

    def ssh_argv(
        self, mode: str, control: list[str], env: Mapping[str, str] | None = None, log: str | None = None
    ) -> list[str]:
        """``ssh MODE -o RemoteCommand=none CONTROL [DSH_MAGICS_SSH_OPTIONS] [-E LOG] DEFAULTS [-p] [-l] -- host``
        (a remote command goes after it). The engine's options come first:
        ssh keeps the first value of each; ``-E`` comes after the user's, as
        ssh keeps the last log file it is given."""
        env = os.environ if env is None else env
        extra = shlex.split(env.get(ENV_SSH_OPTIONS, ""))
        argv = [env.get(ENV_SSH) or "ssh", mode, *NO_REMOTE_COMMAND, *control, *extra]
        if log is not None:
            argv += ["-E", log]
        argv += [
            "-o", "BatchMode=yes",
            "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}",
            "-o", f"ServerAliveInterval={ALIVE_INTERVAL_S}",
            "-o", f"ServerAliveCountMax={ALIVE_COUNT}",
        ]  # fmt: skip
        if self.port is not None:
            argv += ["-p", str(self.port)]
        if self.user is not None:
            argv += ["-l", self.user]
        return [*argv, "--", self.host or ""]

    def kubectl_exec(self, flags: str) -> list[str]:
        """``kubectl [--context C] exec FLAGS -n NS POD [-c CONTAINER]``: the
        terminal's own exec (``-it``) and the side channel's (``-i``)."""
        argv = ["kubectl"]
        if self.context:
            argv += ["--context", self.context]
        argv += ["exec", flags, "-n", self.namespace or "", self.pod or ""]
        if self.container:
            argv += ["-c", self.container]
        return argv


def control_options(control_dir: str, master: bool) -> list[str]:
    """ssh options for the engine's own control connection: a socket in a
    private directory (the user's control sockets are never used). They come
    before DSH_MAGICS_SSH_OPTIONS' and the config's, so they win. The
    terminal's ssh is the ``master`` itself, without ``ControlPersist``: no
    daemon, no mux hop for the terminal's bytes, and nothing of it outlives
    that ssh; the side channel's ssh is a session over it."""
    path = os.path.join(control_dir, CONTROL_SOCKET)
    return ["-o", f"ControlMaster={'yes' if master else 'no'}", "-o", f"ControlPath={path}", "-o", "ControlPersist=no"]


def enabled_kinds(environ: dict[str, str] | None = None) -> tuple[str, ...]:
    """Kinds of remote target allowed by ``DSH_MAGICS_TARGETS``: unset or
    ``all`` allows every kind, ``local`` none, else a comma list of kinds."""
    env = os.environ if environ is None else environ
    raw = env.get(ENV_TARGETS, "").strip().lower()
    if raw in ("", "all"):
        return KINDS
    if raw in ("local", "none"):
        return ()
    kinds = tuple(k.strip() for k in raw.split(",") if k.strip())
    bad = [k for k in kinds if k not in KINDS and k != "local"]
    if bad:
        raise InvalidArgument(
            f"{ENV_TARGETS}: unknown target kind(s) {', '.join(bad)} (use local, all, or some of {', '.join(KINDS)})",
            field="target",
        )
    return tuple(k for k in kinds if k != "local")


def is_local(text: str | None) -> bool:
    return text is None or text.strip() in ("", "local")


def parse_target(text: object, environ: dict[str, str] | None = None) -> Target | None:
    """A :class:`Target`, or None for the local machine (``None``, ``""`` or
    ``"local"``). Anything unparseable, or a kind that configuration
    disables, raises ``INVALID_ARGUMENT``."""
    text = V.text(text, "target")
    if text is None or is_local(text):
        return None
    if "\0" in text or "\n" in text or "\r" in text:
        raise InvalidArgument("target must be one line without NUL characters", field="target")
    target = _parse(text.strip())
    allowed = enabled_kinds(environ)
    if target.kind not in allowed:
        raise InvalidArgument(
            f"{target.kind} targets are disabled on this machine ({ENV_TARGETS}="
            f"{(os.environ if environ is None else environ).get(ENV_TARGETS, '')})",
            field="target",
            target=text,
        )
    return target


def _bad(text: str, why: str) -> InvalidArgument:
    return InvalidArgument(
        f"cannot parse target {text!r}: {why}. Use ssh://[user@]host[:port], docker://CONTAINER, "
        "podman://CONTAINER, kubectl://[CONTEXT/]NAMESPACE/POD[/CONTAINER] or cmd:[--probe=PROBE] ARGV",
        field="target",
        target=text,
    )


def _parse(text: str) -> Target:
    if text.startswith("cmd:"):
        try:
            argv = shlex.split(text[4:])
        except ValueError as e:
            raise _bad(text, f"the command does not split into words ({e})") from None
        probe: list[str] = []
        if argv and argv[0].startswith(PROBE_OPTION):
            try:
                probe = shlex.split(argv.pop(0)[len(PROBE_OPTION) :])
            except ValueError as e:
                raise _bad(text, f"the probe command does not split into words ({e})") from None
            if not probe:
                raise _bad(text, f"{PROBE_OPTION} needs a command")
            if shutil.which(probe[0]) is None:
                raise _bad(text, f"the probe's {probe[0]!r} is not an executable on this machine")
        if not argv:
            raise _bad(text, "cmd: needs a command")
        if shutil.which(argv[0]) is None:
            raise _bad(text, f"{argv[0]!r} is not an executable on this machine")
        return Target("cmd", text, command=tuple(argv), probe=tuple(probe))
    scheme, sep, rest = text.partition("://")
    if not sep or scheme not in ("ssh", "docker", "podman", "kubectl"):
        raise _bad(text, "unknown kind of target")
    if scheme == "ssh":
        return _parse_ssh(text)
    if scheme in ("docker", "podman"):
        if not _CONTAINER.match(rest):
            raise _bad(text, "a container is a name or id (letters, digits, _ . -)")
        return Target(scheme, text, container=rest)
    return _parse_kubectl(text, rest)


def _parse_ssh(text: str) -> Target:
    try:
        parts = urlsplit(text)
        port = parts.port
    except ValueError as e:
        raise _bad(text, str(e)) from None
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.password is not None:
        raise _bad(text, "ssh targets take no path, query or password")
    # Not parts.hostname: it lowercases, and ssh config Host patterns may care.
    hostport = parts.netloc.rsplit("@", 1)[-1]
    if hostport.startswith("["):
        host = hostport[1 : hostport.find("]")] if "]" in hostport else ""
        if not host or not re.fullmatch(r"[0-9A-Fa-f:.]+", host):
            raise _bad(text, "bad IPv6 address")
    else:
        host = hostport.split(":", 1)[0]
        if not host:
            raise _bad(text, "no host")
        if not _HOST.match(host):
            raise _bad(text, "bad host name")
    user = parts.username
    if "@" in parts.netloc and not user:
        raise _bad(text, "empty user name")
    if user is not None and not _USER.match(user):
        raise _bad(text, "bad user name")
    if hostport.endswith(":") or (port is not None and not 1 <= port <= 65535):
        raise _bad(text, "port must be 1-65535")
    return Target("ssh", text, host=host, user=user, port=port)


def _parse_kubectl(text: str, rest: str) -> Target:
    """``NAMESPACE/POD``, ``NAMESPACE/POD/CONTAINER`` or
    ``CONTEXT/NAMESPACE/POD/CONTAINER`` (``CONTAINER`` may be empty there:
    ``CONTEXT/NAMESPACE/POD/`` picks the pod's default container). Three
    parts are read as namespace, pod, container: a context and a namespace
    cannot be told apart by their spelling."""
    parts = rest.split("/")
    if len(parts) == 2:
        context, (namespace, pod), container = None, parts, None
    elif len(parts) == 3:
        context, (namespace, pod, container) = None, parts
    elif len(parts) == 4:
        context, namespace, pod, container = parts
    else:
        raise _bad(text, "kubectl targets have 2 to 4 parts separated by '/'")
    if context is not None and not _K8S_CONTEXT.match(context):
        raise _bad(text, "bad kubectl context name")
    for what, value in (("namespace", namespace), ("pod", pod)):
        if not _K8S_NAME.match(value):
            raise _bad(text, f"bad {what} name (lowercase letters, digits, - and .)")
    if container and not _K8S_NAME.match(container):
        raise _bad(text, "bad container name")
    return Target("kubectl", text, context=context, namespace=namespace, pod=pod, container=container or None)
