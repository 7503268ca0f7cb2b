"""The ``requestState`` of a 2026-07-28 call that asked for a person: signed.

The client echoes the state back on its retry, so it is untrusted input. The
state names the job whose password prompt a person was sent to, and the
retry continues that job; a state another client could forge, or one client
could reuse, would let it continue (and learn the result of) a job it never
asked about. So each state is signed with HMAC-SHA256 under a key this server
process draws at start and never shares, binds the tool, the call's
arguments and the calling client, expires, and names a one-time nonce (the
server forgets a nonce once a retry used it: see ``PersonAnswers.take_request``).
The payload carries only ids, so it is signed, not encrypted.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

#: How long a state stays valid: the longest a call waits for the client's reply.
TTL_S = 600.0
_VERSION = 1


class InvalidState(ValueError):
    """A state this server did not issue to this client for this call (or
    one that expired). The reason stays in the server; the client gets one
    message."""


@dataclass(frozen=True)
class Issued:
    """What a valid state says."""

    job_id: str
    session_id: str
    nonce: str
    key: str


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _digest(arguments: Any) -> str:
    canonical = json.dumps(arguments or {}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return _b64(hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).digest()[:16])


class StateSigner:
    """Signs and checks request states under one process-local key."""

    def __init__(self, key: bytes | None = None, ttl_s: float = TTL_S) -> None:
        self._key = key if key is not None else secrets.token_bytes(32)
        self._ttl_s = ttl_s

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()

    def issue(self, *, tool: str, arguments: Any, client: str, issued: Issued) -> str:
        claims = {
            "v": _VERSION,
            "exp": time.time() + self._ttl_s,
            "tool": tool,
            "args": _digest(arguments),
            "client": client,
            "job": issued.job_id,
            "session": issued.session_id,
            "nonce": issued.nonce,
            "key": issued.key,
        }
        payload = json.dumps(claims, separators=(",", ":"), sort_keys=True).encode()
        return f"{_b64(payload)}.{_b64(self._mac(payload))}"

    def check(self, state: str, *, tool: str, arguments: Any, client: str) -> Issued:
        """What ``state`` says, if this server issued it for exactly this call
        by exactly this client and it has not expired; else InvalidState."""
        try:
            body, mac = state.split(".")
            payload, given = _unb64(body), _unb64(mac)
        except (ValueError, TypeError):
            raise InvalidState("malformed") from None
        if not hmac.compare_digest(given, self._mac(payload)):
            raise InvalidState("signature")
        claims = json.loads(payload)
        if claims.get("v") != _VERSION or not time.time() < claims.get("exp", 0):
            raise InvalidState("expired")
        if claims.get("tool") != tool or claims.get("args") != _digest(arguments):
            raise InvalidState("another call")
        if not hmac.compare_digest(str(claims.get("client")).encode(), client.encode()):
            raise InvalidState("another client")
        return Issued(claims["job"], claims["session"], claims["nonce"], claims["key"])


__all__ = ["InvalidState", "Issued", "StateSigner", "TTL_S"]
