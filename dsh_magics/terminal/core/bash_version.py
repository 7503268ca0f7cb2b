"""Is the configured shell a bash (5.0 or newer) the engine can drive?

Why 5.0, and how the check is cached: docs/internals.md ("Module notes").
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading

from ...errors import ShellUnsupported

MIN_VERSION = (5, 0)
_VERSION = re.compile(r"GNU bash, version (\d+)\.(\d+)(?:\.(\d+))?")

_lock = threading.Lock()
# executable identity -> None (fine) or the error to raise again
_verdicts: dict[tuple[str, int, int, int], ShellUnsupported | None] = {}


def parse(text: str) -> tuple[int, int, int] | None:
    """The version in ``bash --version`` output, or None if it is not bash's."""
    m = _VERSION.search(text)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def require(shell: str) -> None:
    """Raise ``SHELL_UNSUPPORTED`` if ``shell`` is a bash older than
    ``MIN_VERSION`` or answers ``--version`` (successfully) as another
    program. A shell that fails ``--version`` or prints nothing is let
    through: its start-up says what is wrong."""
    path = shutil.which(shell) or shell
    try:
        st = os.stat(path)
    except OSError:
        return  # the spawn reports a missing shell
    key = (os.path.realpath(path), st.st_ino, st.st_size, st.st_mtime_ns)
    with _lock:
        if key in _verdicts:
            verdict = _verdicts[key]
        else:
            verdict = _verdicts[key] = _check(shell, path)
    if verdict is not None:
        raise ShellUnsupported(verdict.message, **verdict.details)


def _check(shell: str, path: str) -> ShellUnsupported | None:
    try:
        done = subprocess.run(
            [path, "--version"],
            capture_output=True,
            text=True,
            errors="replace",
            stdin=subprocess.DEVNULL,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None  # no answer (``/bin/false``): its start-up says what is wrong
    out = done.stdout
    required = ".".join(map(str, MIN_VERSION))
    how = (
        "install a newer bash (on macOS: brew install bash, which puts it at "
        "/opt/homebrew/bin/bash, or /usr/local/bin/bash on Intel Macs) and set "
        "DSH_MAGICS_SHELL to its path (or TerminalConfig(shell=...))"
    )
    version = parse(out)
    if version is None:
        first = out.strip().splitlines()[0][:80] if out.strip() else ""
        if not first:
            return None
        return ShellUnsupported(
            f"{shell} is not GNU bash ('{shell} --version' says {first!r}); dsh-magics needs "
            f"bash {required} or newer: {how}",
            shell=shell,
            found=first,
            required=required,
        )
    if version[:2] >= MIN_VERSION:
        return None
    found = ".".join(map(str, version))
    return ShellUnsupported(
        f"{shell} is bash {found}; dsh-magics needs bash {required} or newer: {how}",
        shell=shell,
        found=found,
        required=required,
    )
