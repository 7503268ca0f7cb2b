"""Named keys and the bytes an xterm sends for them, in the terminal's
current modes (a screen's :class:`~dsh_magics.terminal.snapshot.Modes`).

After a program turns on application cursor keys (DECCKM, ``ESC [ ? 1 h``,
which curses' ``keypad()`` does), the arrows, Home and End are sent as
``ESC O x`` instead of ``ESC [ x``; a curses menu ignores the other form.
In application keypad mode (DECKPAM, ``ESC =``) the keypad keys (``kp-*``)
send ``ESC O x`` too. Everything else is the same in every mode. Names are
case-insensitive; the names of ``interaction.KEYS`` mean the same here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol


class KeyModes(Protocol):
    @property
    def app_cursor(self) -> bool: ...

    @property
    def app_keypad(self) -> bool: ...


ESC = b"\x1b"

#: Keys whose bytes depend on application cursor mode: (normal, application).
_CURSOR: dict[str, tuple[bytes, bytes]] = {
    name: (ESC + b"[" + final, ESC + b"O" + final)
    for name, final in (
        ("up", b"A"),
        ("down", b"B"),
        ("right", b"C"),
        ("left", b"D"),
        ("home", b"H"),
        ("end", b"F"),
    )
}

#: Keypad keys: (numeric keypad mode, application keypad mode).
_KEYPAD: dict[str, tuple[bytes, bytes]] = {
    **{f"kp-{d}": (str(d).encode(), ESC + b"O" + bytes([ord("p") + d])) for d in range(10)},
    "kp-enter": (b"\r", ESC + b"OM"),
    "kp-plus": (b"+", ESC + b"Ok"),
    "kp-minus": (b"-", ESC + b"Om"),
    "kp-star": (b"*", ESC + b"Oj"),
    "kp-slash": (b"/", ESC + b"Oo"),
    "kp-dot": (b".", ESC + b"On"),
}

#: Keys whose bytes are the same in every mode.
_FIXED: dict[str, bytes] = {
    "enter": b"\r",
    "tab": b"\t",
    "shift-tab": ESC + b"[Z",
    "esc": ESC,
    "escape": ESC,
    "space": b" ",
    "backspace": b"\x7f",
    "insert": ESC + b"[2~",
    "delete": ESC + b"[3~",
    "pgup": ESC + b"[5~",
    "pageup": ESC + b"[5~",
    "pgdn": ESC + b"[6~",
    "pagedown": ESC + b"[6~",
    "f1": ESC + b"OP",
    "f2": ESC + b"OQ",
    "f3": ESC + b"OR",
    "f4": ESC + b"OS",
    **{
        f"f{n}": ESC + b"[" + code + b"~"
        for n, code in (
            (5, b"15"),
            (6, b"17"),
            (7, b"18"),
            (8, b"19"),
            (9, b"20"),
            (10, b"21"),
            (11, b"23"),
            (12, b"24"),
        )
    },
    **{f"ctrl-{chr(c)}": bytes([c - ord("a") + 1]) for c in range(ord("a"), ord("z") + 1)},
    "ctrl-space": b"\x00",
    "ctrl-@": b"\x00",
    "ctrl-[": ESC,
    "ctrl-\\": b"\x1c",
    "ctrl-]": b"\x1d",
    **{f"alt-{chr(c)}": ESC + bytes([c]) for c in range(ord("a"), ord("z") + 1)},
    **{f"alt-{d}": ESC + str(d).encode() for d in range(10)},
    "alt-enter": ESC + b"\r",
    "alt-backspace": ESC + b"\x7f",
}

#: Every key name :func:`encode` knows, in a stable order.
VALID_KEYS: tuple[str, ...] = (*_CURSOR, *_FIXED, *_KEYPAD)

_ALL = frozenset(VALID_KEYS)


class _Normal:
    app_cursor = False
    app_keypad = False


NORMAL: KeyModes = _Normal()


def invalid(names: Iterable[object]) -> list[str]:
    """The names (as given, repr'd when not strings) that are not keys; empty
    when every one is. Never raises, so callers can word their own error."""
    return [n if isinstance(n, str) else repr(n) for n in names if not is_key(n)]


def is_key(name: object) -> bool:
    return isinstance(name, str) and name.lower() in _ALL


#: Names that mean the same as another, left out of :func:`describe_valid`.
ALIASES = {"escape": "esc", "pageup": "pgup", "pagedown": "pgdn", "ctrl-@": "ctrl-space"}


def describe_valid() -> str:
    """Every valid name but the aliases, compactly (``f1-f12``,
    ``ctrl-a..ctrl-z``), for an error message or a help text: built from the
    tables above, so it cannot miss a key (tests/terminal/test_keys.py)."""
    names = [n for n in VALID_KEYS if n not in ALIASES]
    out: list[str] = []
    i = 0
    while i < len(names):
        j = i
        while j + 1 < len(names) and _next_in_range(names[j], names[j + 1]):
            j += 1
        if j - i >= 2:
            sep = "-" if names[i][0] == "f" and names[i][1:].isdigit() else ".."
            out.append(f"{names[i]}{sep}{names[j]}")
        else:
            out.extend(names[i : j + 1])
        i = j + 1
    return ", ".join(out)


def _next_in_range(a: str, b: str) -> bool:
    """Is ``b`` the name after ``a`` in a run like ctrl-a, ctrl-b or f1, f2?"""
    if a[0] == b[0] == "f" and a[1:].isdigit() and b[1:].isdigit():
        return int(b[1:]) == int(a[1:]) + 1
    pa, _, ca = a.rpartition("-")
    pb, _, cb = b.rpartition("-")
    return bool(pa) and pa == pb and len(ca) == len(cb) == 1 and ca.isalnum() and ord(cb) == ord(ca) + 1


def encode(name: str, modes: KeyModes | None = None) -> bytes:
    """The bytes of one named key in ``modes`` (normal modes when None).
    An unknown name raises ValueError; check with :func:`invalid` first."""
    m = modes if modes is not None else NORMAL
    key = name.lower()
    if key in _CURSOR:
        return _CURSOR[key][1 if m.app_cursor else 0]
    if key in _KEYPAD:
        return _KEYPAD[key][1 if m.app_keypad else 0]
    if key in _FIXED:
        return _FIXED[key]
    raise ValueError(f"key {name!r} is not a named key; use one of {describe_valid()}")


def encode_all(names: Iterable[str], modes: KeyModes | None = None) -> bytes:
    """Several keys, in order, as one write."""
    return b"".join(encode(n, modes) for n in names)
