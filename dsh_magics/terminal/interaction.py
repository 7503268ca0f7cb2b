"""Typing into a running job, and knowing when a job waits to be typed to.

Three small things the engine and every adapter share:

* :data:`KEYS` and :func:`encode`: what bytes a named key or a line of text
  puts on the terminal, so ``send(..., key="ctrl-c")`` means the same from a
  magic, a tool, the panel and the host.
* :class:`InputRecord`: one entry of a job's record of who typed what, with
  secret text never stored.
* :class:`AwaitingInput`: what a job waiting to be typed to waits with (how
  a terminal finds out: :mod:`.core.tty` for the local one, the side channel
  for a remote one).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument, SecretInput
from . import keys
from . import validation as V
from .keys import KeyModes

if TYPE_CHECKING:
    from .result import ReadResult, Result

# ----------------------------------------------------------------------------
# named keys
#: Named keys and the bytes a terminal sends for them. ``enter`` is a carriage
#: return, as a keyboard sends it (the line discipline turns it into ``\n``
#: for programs in canonical mode, and raw-mode programs expect ``\r``).
KEYS: dict[str, bytes] = {
    "enter": b"\r",
    "tab": b"\t",
    "esc": b"\x1b",
    "up": b"\x1b[A",
    "down": b"\x1b[B",
    "right": b"\x1b[C",
    "left": b"\x1b[D",
    "backspace": b"\x7f",
    "ctrl-c": b"\x03",
    "ctrl-d": b"\x04",
    "ctrl-z": b"\x1a",
    "ctrl-l": b"\x0c",
    "ctrl-u": b"\x15",
}

#: Longest text one ``send`` accepts. The terminal's canonical line buffer
#: holds 4095 bytes; a longer line would be cut by the kernel, silently.
MAX_SEND_CHARS = 4000

#: How long ``send`` waits for the job to react when not told otherwise.
DEFAULT_SEND_WAIT_MS = 2_000

SOURCES = V.SOURCES
PERSON, AGENT = SOURCES[:2]
#: Stands in for a None the checks must refuse (they take None as "not given").
_NOT_NONE = object()
REDACTED = "[secret]"


def hidden_entry_refused(session_id: str, job_id: str) -> SecretInput:
    """SECRET_INPUT for an agent's text to a job that asks for hidden entry
    (one wording for the local and the remote terminal)."""
    return SecretInput(
        f"job {job_id} asks for hidden entry (a password or passphrase): a person "
        "must answer it (%bash_send --secret, or the panel's password box); an agent "
        "may only send keys such as ctrl-c",
        session_id=session_id,
        job_id=job_id,
    )


def key_bytes(name: str, modes: keys.KeyModes | None = None) -> bytes:
    """The bytes of a named key in the screen's ``modes`` (an xterm's, e.g.
    ``ESC O B`` for Down in application cursor mode; :mod:`.keys`);
    INVALID_ARGUMENT names the keys there are."""
    if not keys.is_key(name):
        shown = repr(name)[:40]
        raise InvalidArgument(f"key {shown} is not a named key; use one of {keys.describe_valid()}", field="key")
    return keys.encode(name, modes)


def keys_bytes(names: object, modes: keys.KeyModes | None = None) -> bytes:
    """Several named keys, in order, as one write; INVALID_ARGUMENT lists the
    bad names and the valid ones."""
    if not isinstance(names, (list, tuple)) or not names:
        raise InvalidArgument("keys must be a non-empty list of key names", field="keys")
    if len(names) > MAX_KEYS:
        raise InvalidArgument(f"keys holds {len(names)} names; one send takes at most {MAX_KEYS}", field="keys")
    bad = keys.invalid(names)
    if bad:
        shown = ", ".join(repr(b)[:40] for b in bad[:5])
        raise InvalidArgument(
            f"keys {shown} are not named keys; use any of {keys.describe_valid()}", field="keys", invalid=bad[:20]
        )
    return keys.encode_all(names, modes)


#: Most keys one ``send`` takes.
MAX_KEYS = 200


def encode(text: str | None = None, *, enter: bool = True, key: str | None = None) -> bytes:
    """The bytes to type: ``text`` (then Enter, unless ``enter=False``), or
    one named ``key`` (never followed by Enter). Exactly one of the two."""
    if key is not None:
        if text not in (None, ""):
            raise InvalidArgument("send either text or a key, not both", field="key")
        return key_bytes(key)
    if text is None:
        text = ""
    if len(text) > MAX_SEND_CHARS:
        raise InvalidArgument(
            f"text is {len(text)} characters long; one send takes at most {MAX_SEND_CHARS}",
            field="text",
        )
    if "\n" in text.rstrip("\n") or "\r" in text.rstrip("\r\n"):
        # Several lines in one send would be several answers, given to
        # whatever reads next; a record of one input must be one line.
        raise InvalidArgument("text must be one line; send each line separately", field="text")
    text = text.rstrip("\r\n")
    if not text and not enter:
        raise InvalidArgument("nothing to send: empty text without Enter", field="text")
    return text.encode("utf-8", "surrogateescape") + (KEYS["enter"] if enter else b"")


def check_send(*, source: object, caller: object, secret: object, allow_secret: object) -> None:
    """The options of ``send``, with the contract's checks. ``source``,
    ``secret`` and ``allow_secret`` have defaults in every signature, so
    None is refused for them rather than taken as "not given"."""
    V.source(_NOT_NONE if source is None else source)
    V.caller(caller)
    V.flag(_NOT_NONE if secret is None else secret, "secret")
    V.flag(_NOT_NONE if allow_secret is None else allow_secret, "allow_secret")


def since_input(res: Result, rr: ReadResult, start_line: int, prompt: str) -> Result:
    """``res`` with ``output`` cut to what the terminal showed after an
    input: the ring from ``start_line``, without the prompt the input was
    typed onto (it was already shown)."""
    text = "".join(line + "\n" for line in rr.lines) + rr.partial
    if prompt and text.startswith(prompt):
        text = text[len(prompt) :]
    if res.done and not res.output.endswith("\n") and text.endswith("\n"):
        text = text[:-1]  # the job's last line, numbered when it ended, had no newline
    return replace(
        res, output=text, start_line=start_line, dropped_lines=rr.dropped, omitted_lines=0, styles=None
    )


# ----------------------------------------------------------------------------
# the record of who typed
@dataclass(frozen=True)
class Typing:
    """What ``send`` was asked to type, as one value (text or a named key;
    who typed it; whether it is secret)."""

    text: str | None = None
    key: str | None = None
    enter: bool = True
    source: str = "person"
    caller: str | None = None
    secret: bool = False
    allow_secret: bool = True
    allow_unknown_prompt: bool = False  # with allow_secret false: type where prompts cannot be seen (remote)
    keys: tuple[str, ...] | None = None  # several named keys, in order
    raw: bool = False  # ``text`` is bytes a terminal sent (an attached person's keys), typed as they are

    @property
    def keyed(self) -> bool:
        """Named keys (whose bytes depend on the screen's modes), not text."""
        return self.key is not None or self.keys is not None

    def data(self, modes: KeyModes | None = None) -> bytes:
        """The bytes to type; keys as an xterm in ``modes`` sends them."""
        if self.keys is not None:
            if self.text not in (None, "") or self.key is not None:
                raise InvalidArgument("send text, one key or keys, not two of them", field="keys")
            return keys_bytes(list(self.keys), modes)
        if self.key is not None:
            if self.text not in (None, ""):
                raise InvalidArgument("send either text or a key, not both", field="key")
            return key_bytes(self.key, modes)
        if self.raw:
            # A terminal emulator already encoded these for the screen's modes.
            return (self.text or "").encode("utf-8", "surrogateescape")
        return encode(self.text, enter=self.enter)

    def record(self, hidden: bool = False) -> InputRecord:
        """Its record (``hidden``: the job asks for hidden entry right now)."""
        return InputRecord.make(
            self.source, self.text, secret=not self.keyed and (self.secret or hidden),
            key=" ".join(self.keys) if self.keys is not None else self.key,
            caller=self.caller, enter=self.enter,
        )


@dataclass
class InputRecord:
    """One input sent to a job: who (``person`` through a magic or the panel,
    ``agent`` through a tool, with its caller session), when, and what. Secret
    text is never kept: ``text`` is ``"[secret]"`` then."""

    source: str
    at: float
    text: str
    secret: bool = False
    key: str | None = None
    caller: str | None = None
    enter: bool = True

    def to_dict(self) -> dict[str, Any]:
        # Not asdict (a deep copy of plain fields): on the path of every attached key.
        return {"source": self.source, "at": self.at, "text": self.text, "secret": self.secret,
                "key": self.key, "caller": self.caller, "enter": self.enter}  # fmt: skip

    @classmethod
    def make(
        cls,
        source: str,
        text: str | None,
        *,
        secret: bool,
        key: str | None = None,
        caller: str | None = None,
        enter: bool = True,
    ) -> InputRecord:
        """The record of a checked input (:func:`check_send`)."""
        shown = "" if key is not None else (REDACTED if secret else (text or ""))
        return cls(
            source=source,
            at=time.time(),
            text=shown,
            secret=bool(secret) and key is None,
            key=key.lower() if key else None,
            caller=caller,
            enter=enter if key is None else False,
        )


# ----------------------------------------------------------------------------
# awaiting input
@dataclass
class AwaitingInput:
    """The job's foreground process waits for the terminal.

    ``prompt`` is the unfinished last line of the job's output (what a person
    would see next to the cursor; empty when the output ends with a newline).
    ``secret`` is true when the terminal's echo is off: the program asked
    for hidden entry (``read -s``, ``getpass``, ``sudo``, ``ssh``)."""

    pid: int
    name: str
    prompt: str
    secret: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


MAX_PROMPT_CHARS = 200

__all__ = [
    "AGENT",
    "DEFAULT_SEND_WAIT_MS",
    "KEYS",
    "MAX_KEYS",
    "MAX_PROMPT_CHARS",
    "MAX_SEND_CHARS",
    "PERSON",
    "REDACTED",
    "SOURCES",
    "AwaitingInput",
    "InputRecord",
    "Typing",
    "check_send",
    "encode",
    "hidden_entry_refused",
    "key_bytes",
    "keys_bytes",
    "since_input",
]
