"""What an ssh terminal runs and types to start bash, whatever the user's login shell is.

``wrapped_shell``: bash under a small ``sh`` that says when it has ended
(the remote command of a ``login=False`` start, and what a login shell other
than bash execs). ``login_check``: the one line a login start types first
into the login shell sshd started. Their ``KEY`` and ``SHELL_END`` markers are
the remote grammar's (inband.py, ``ShellScanner``). docs/remote.md, "The
login start" and "The engine's ssh connection".
"""

from __future__ import annotations

import shlex

from .inband import KEY, SHELL_END

__all__ = ["LOGIN_BASH", "QUIET_PROMPT", "login_check", "wrapped_shell"]

_DRAW_NONCE = (
    "if IFS=- read -r a b c d e </proc/sys/kernel/random/uuid; then n=$a${e%????}; "
    "else n=$(od -An -N8 -tx8 /dev/urandom); n=${n##* }; fi; "
)
"""``sh`` setting ``n`` to 64 random bits in hex, with no process where the uuid file is."""
LOGIN_BASH = ["bash", "-l", "-i"]
QUIET_PROMPT = "\\builtin unset 'PROMPT_COMMAND' 'PS0' 'PS1'"
"""The check's third command, run by bash alone (the first fails there), so
that the prompt bash shows after the check line runs nothing of the user's
(a ``PROMPT_COMMAND`` such as pyenv-virtualenv's hook is a process a run,
a ``PS1`` may run ``$(__git_ps1)``). Other shells exec before it and only
parse it. The names are quoted: zsh's ``correct_all`` would otherwise ask
to correct ``PS0`` to a file ``ps0`` in the login directory, and the start
would wait on the question
(tests/remote/test_login_shells.py::test_zshs_spelling_correction_does_not_stall_the_start)."""


def login_check(nonce: str) -> str:
    """Typed first to the user's login shell, whatever it is, when an ssh
    terminal runs no remote command (``Target.starts_login_shell``), before
    the set-up, which is typed once a ``KEY`` marker says bash reads it.

    One line that ``sh``, bash, zsh, ksh, fish (3.0 on) and csh parse
    alike: two commands joined by ``&&``, their scripts single-quoted words
    with no ``'``, no ``!`` (csh expands it even there) and no ``\\\\`` or
    ``\\'`` (fish's escapes there), then ``|| QUIET_PROMPT``. Its ``/bin/sh`` looks at the
    process that ran it (``/proc/$PPID/comm``, read with no process
    started): under a bash login shell it prints the ``KEY`` marker with the
    engine's ``nonce`` and fails, so bash unsets its prompt hooks
    (:data:`QUIET_PROMPT`) and goes on to read the set-up (the profile and
    ``~/.bashrc`` were read once). Under any other shell (or
    where ``/proc`` says nothing) it succeeds, and the shell execs
    :func:`wrapped_shell` of ``bash -l -i``, which prints its own ``KEY``
    first (as a ``login=False`` start does). The set-up is typed only after
    a ``KEY``, so a line editor reading ahead takes none of it into the
    ``exec``. The failed ``&&`` runs no ERR trap and trips no ``set -e``; a
    leading space keeps it out of a history that ignores such lines (bash's
    ``HISTCONTROL=ignorespace``, zsh's ``hist_ignore_space``, fish).
    tests/remote/test_login_start.py and test_login_shells.py (each shell
    logs in for real) pin it."""
    check = (
        'exec 2>/dev/null; read -r p </proc/$PPID/comm || exit 0; [ "$p" = bash ] || exit 0; '
        f'printf "\\033]6973;{KEY};{nonce}\\007"; exit 1'
    )
    return f" /bin/sh -c {shlex.quote(check)} && {wrapped_shell(LOGIN_BASH)} || {QUIET_PROMPT}"


def wrapped_shell(bash: list[str]) -> str:
    """The remote command of an ssh terminal whose ssh is its connection's
    control master (``login=False``), and what a login start's shell
    other than bash execs (:func:`login_check`): ``bash`` under a small
    ``sh`` that says when it has ended. An ssh master outlives its own session while another session over
    it is open (the side channel's), so the engine must learn that the
    remote shell ended and close the side channel itself.

    The wrapper draws a nonce of its own (64 random bits: from a new
    ``/proc/sys/kernel/random/uuid``, read with no process started, else 8
    bytes of ``/dev/urandom`` through ``od``; in no argv or environment a
    job could read), prints it in a ``KEY`` marker
    before bash starts, and the same nonce in a ``SHELL_END`` marker once
    bash has returned, however it ended (``exit``, a signal, a user's EXIT
    trap: that runs inside bash, before). Then it ends as bash did: with its
    status, or by the same signal (ssh then says 255, as for a bash killed
    by a signal; so an ``exit 130`` also reads as one). ``sh`` runs it
    whatever the user's login shell is; it reads no start-up file for ``-c``,
    and its own stderr is /dev/null (it would report a killed bash there,
    into the job's output); bash gets the session's.
    """
    script = (
        f"exec 3>&2 2>/dev/null; {_DRAW_NONCE}"
        f'printf "\\033]6973;{KEY};%s\\007" "$n"; '
        f"({' '.join(bash)} 2>&3 3>&-); s=$?; "
        f'printf "\\033]6973;{SHELL_END};%s\\007" "$n"; '
        '[ "$s" -gt 128 ] && [ "$s" -le 192 ] && kill -$((s-128)) $$; exit "$s"'
    )
    return "exec sh -c " + shlex.quote(script)
