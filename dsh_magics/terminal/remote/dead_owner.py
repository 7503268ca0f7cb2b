"""What ends a container terminal's remote side once its owner is dead.

A container's exec session does not end with its client: a ``podman exec``
or ``docker exec`` that dies with its owner (SIGKILL, ``os._exit``) left the
container's bash, and what it started there, running for good
(tests/reliability/test_exit_leftovers.py::test_nothing_left_in_the_container_when_the_owner_goes).
A closing terminal hangs the shell up through the side channel
(remote_terminal.py); a dead owner cannot, so its watchdog
(``core.watchdog``) runs this command instead: a second ``exec`` into the
container that ends there every process carrying the terminal's token. The
terminal's bash gets the token at its start (``-e``: ``Target.argv``) and
its children inherit it, as a local shell's do.
"""

from __future__ import annotations

from ..core.procs import TOKEN_VAR
from .targets import Target

END_VAR = "DSH_MAGICS_END"
"""The end command's environment variable that holds the token: it reaches
the container (``exec -e DSH_MAGICS_END``) from the watchdog's environment
for the command, never on an argv (world-readable). Its name is not
``TOKEN_VAR``: the script's own processes carry no token."""

# POSIX sh (cat, kill, and a sleep that takes 0.1, there): the processes
# whose environment holds the token (a zombie's reads empty); SIGHUP and
# SIGCONT to them, as a closing terminal hangs up its shell and jobs, up to
# 2 s for them to go, then SIGKILL. No token, nothing (an empty one would
# match every terminal's processes).
_END = (
    "[ -n \"${end}\" ] || exit 0; t={var}=${end}; "
    "carriers() {{ c=; for d in /proc/[0-9]*; do e=$(cat \"$d/environ\" 2>/dev/null) || continue; "
    "case $e in *\"$t\"*) c=\"$c ${{d#/proc/}}\";; esac; done; echo $c; }}; "
    "p=$(carriers); [ -n \"$p\" ] || exit 0; kill -HUP $p; kill -CONT $p; "
    "n=20; while [ $n -gt 0 ]; do p=$(carriers); [ -n \"$p\" ] || exit 0; sleep 0.1; n=$((n-1)); done; "
    "kill -KILL $p"
)


def end_argv(target: Target, token: str) -> list[str] | None:
    """The local command that ends ``token``'s processes where the terminal
    runs; None where nothing is needed or possible: ssh (sshd hangs up the
    session when the connection drops), ``cmd:`` (its processes are local
    and carry the token: the watchdog's own scan finds them) and kubectl
    (``kubectl exec`` sets no environment: a stated limit, docs/remote.md)."""
    if target.kind in ("docker", "podman") and token.isalnum():
        script = _END.format(var=TOKEN_VAR, end=END_VAR)
        return [target.kind, "exec", "-e", END_VAR, target.container or "", "sh", "-c", script]
    return None


def end_env(token: str) -> dict[str, str]:
    """What :func:`end_argv`'s command needs in its environment besides the owner's."""
    return {END_VAR: token}
