"""What the tests read of a process from /proc: its command name and its
parent. One copy, shared by the sshd fixture (tests/sshd.py) and the
launch-check tests."""

from __future__ import annotations


def comm(pid: int) -> str:
    """The process's command name, or "" once it has gone."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def ppid(pid: int) -> int | None:
    """The process's parent, or None once it has gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None
