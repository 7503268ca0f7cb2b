"""Task ids that cannot be guessed, yet name their job (docs/mcp.md, "Task ids").

The tasks extension makes a task id a bearer token: whoever holds it may poll
and cancel the task, so it MUST be unguessable. A task here is a view of one
job, and a server started after a client's restart must find the tasks the
terminal host still runs; so the id is not a random handle kept in memory
but ``JOB~SESSION~TAG``: the job, its terminal's session, and an HMAC-SHA256
tag of both (and of the host's name) under a secret key of this user. Only a
holder of the key can make a tag; the job and session alone (which
``bash_list`` shows any client) name no task.

The key lives as long as the terminals it names. With a terminal host it is
the file ``tasks.key`` in the hosts' runtime directory (the 0700 directory of
the hosts' sockets, ``$XDG_RUNTIME_DIR/dsh-magics`` by default), 32 random
bytes, mode 0600, made by the first server that needs it; a file another
user could read or replace is refused (``TASK_KEY_UNSAFE``), as ssh refuses
an open private key. With terminals in the server process, tasks end with
it, and the key is drawn at start and never written.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets

from ..errors import DshError
from ..host.runtime import not_private

#: The key file, in the hosts' runtime directory.
KEY_FILE = "tasks.key"
KEY_BYTES = 32
#: Bytes of the tag kept in an id (128 bits).
TAG_BYTES = 16
_SEP = "~"
_PURPOSE = b"dsh-magics task id v1"


class TaskKeyUnsafe(DshError):
    """The task key file is not private to this user (or not one we wrote)."""

    code = "TASK_KEY_UNSAFE"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class TaskIds:
    """Makes and checks the task ids of one terminal host (``host``: its
    name, or None for terminals in this process) under ``key``."""

    def __init__(self, key: bytes, host: str | None) -> None:
        if len(key) < 16:
            raise ValueError("a task key has at least 16 bytes")
        self._keyed = hmac.new(key, _PURPOSE, hashlib.sha256)  # copied per id: the key set up once
        self._host = (host or "").encode("utf-8")

    @classmethod
    def ephemeral(cls) -> TaskIds:
        """Ids for terminals in this process: a key that dies with it."""
        return cls(secrets.token_bytes(KEY_BYTES), None)

    def _tag(self, job_id: str, session_id: str) -> str:
        # each part length-prefixed: no two (job, session) pairs sign alike
        parts = (self._host, job_id.encode("utf-8", "surrogatepass"), session_id.encode("utf-8", "surrogatepass"))
        mac = self._keyed.copy()
        mac.update(b"".join(len(p).to_bytes(4, "big") + p for p in parts))
        return _b64(mac.digest()[:TAG_BYTES])

    def make(self, job_id: str, session_id: str) -> str:
        return f"{job_id}{_SEP}{session_id}{_SEP}{self._tag(job_id, session_id)}"

    def check(self, value: str) -> tuple[str, str] | None:
        """``(job_id, session_id)`` of an id this key made, else None (the
        caller answers as for a task that does not exist)."""
        job_id, sep, rest = value.partition(_SEP)
        session_id, sep2, tag = rest.rpartition(_SEP)
        if not (sep and sep2 and job_id and session_id and tag):
            return None
        if not hmac.compare_digest(tag.encode("ascii", "replace"), self._tag(job_id, session_id).encode("ascii")):
            return None
        return job_id, session_id


def key_path(directory: str) -> str:
    return os.path.join(directory, KEY_FILE)


def load_key(directory: str) -> bytes:
    """This user's task key in ``directory`` (a private hosts' runtime
    directory), made on first use; TASK_KEY_UNSAFE for a file that is not
    a regular file of this user with mode 0600 and 32 bytes."""
    path = key_path(directory)
    for _ in range(3):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            _create(path)
            continue
        except OSError as e:  # ELOOP: a symbolic link
            raise TaskKeyUnsafe(f"refusing the task key {path}: {e.strerror}; remove it (a new one is made)", path=path) from None
        try:
            problem = not_private(os.fstat(fd), "regular file")
            key = os.read(fd, KEY_BYTES + 1) if problem is None else b""
            if problem is None and len(key) != KEY_BYTES:
                problem = f"holds {len(key)} bytes, not the {KEY_BYTES} of a key this program made"
        finally:
            os.close(fd)
        if problem:
            raise TaskKeyUnsafe(
                f"refusing the task key {path}: it {problem}. Remove it and a new key is made "
                "(tasks handed out under the old key are then unknown)",
                path=path,
            )
        return key
    raise TaskKeyUnsafe(f"the task key {path} keeps disappearing while it is read", path=path)


def _create(path: str) -> None:
    """Write a new key where none is, atomically: a racing server either
    wins (and both read its key) or finds ours complete."""
    tmp = f"{path}.{os.getpid()}.{secrets.token_hex(4)}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(KEY_BYTES))
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another server made it first: its key is the one
    finally:
        os.unlink(tmp)


__all__ = ["KEY_FILE", "TaskIds", "TaskKeyUnsafe", "key_path", "load_key"]
