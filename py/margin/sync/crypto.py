"""Sync's encryption: the envelope every object on the server is written in, and the key check.

Invariants (docs/security.md, "Sync"):
1. The key is PBKDF2-SHA256 of the passphrase (ITERATIONS, a random 16-byte salt), derived once
   when the user turns sync on; the passphrase itself is never stored. What the server keeps in
   the clear is the salt, the iteration count and the key's id (random, not derived).
2. Every object is `MS1.<key id>.<nonce>.<ciphertext>`: AES-256-GCM with a fresh random 96-bit
   nonce per write, its associated data `MS1 <key id> <object name>`, so an object moved under
   another name, cut short or changed in one bit does not open.
3. An object under another key id is "encrypted with another passphrase"; one whose tag fails is
   "damaged": either is one sentence, and nothing is changed on either side.
4. The key check (`keycheck` on the server) holds the KDF's parameters and a sealed known text:
   a wrong passphrase is found before anything is written, here or there.
"""

from __future__ import annotations

import base64
import json
import secrets
from dataclasses import dataclass
from typing import Any

from ..base.errors import MarginError
from ..platform.ports import CryptoRefused, Platform

FORMAT = "MS1"
# OWASP's figure for PBKDF2-HMAC-SHA256 (2023): ~0.3-0.6 s in WebCrypto, once per passphrase entry.
ITERATIONS = 600_000
# A key check asking for fewer is refused (a server must not be able to weaken the key); more than
# MAX_ITERATIONS would make turning on take minutes.
MIN_ITERATIONS = 100_000
MAX_ITERATIONS = 10_000_000
KEY_CHECK_NAME = "keycheck"
KEY_CHECK_TEXT = "Margin sync key check"
PASSPHRASE_MIN = 8


@dataclass(frozen=True)
class SyncKey:
    key_id: str
    key: str  # the raw 256-bit key, base64

    def to_json(self) -> dict[str, str]:
        return {"keyId": self.key_id, "key": self.key}


def wrong_passphrase() -> MarginError:
    return MarginError.said("sync_wrong_passphrase", "py_error_sync_wrong_passphrase")


def other_passphrase() -> MarginError:
    return MarginError.said("sync_other_passphrase", "py_error_sync_other_passphrase")


def damaged() -> MarginError:
    return MarginError.said("sync_damaged", "py_error_sync_damaged")


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _aad(key_id: str, name: str) -> str:
    return f"{FORMAT} {key_id} {name}"


async def seal(platform: Platform, key: SyncKey, name: str, plaintext: str) -> str:
    """The envelope of `plaintext`, to be stored under `name` (rule 2)."""
    nonce = _b64(secrets.token_bytes(12))
    sealed = await platform.crypto.seal(key.key, nonce, plaintext, _aad(key.key_id, name))
    return f"{FORMAT}.{key.key_id}.{nonce}.{sealed}"


def key_id_of(envelope: str) -> str:
    """The key id in an envelope's header; raises `damaged` when it has no header."""
    parts = envelope.split(".", 3)
    if len(parts) != 4 or parts[0] != FORMAT or not parts[1]:
        raise damaged()
    return parts[1]


async def unseal(platform: Platform, key: SyncKey, name: str, envelope: str) -> str:
    """The text sealed under `name` (rules 2, 3)."""
    key_id = key_id_of(envelope)
    if key_id != key.key_id:
        raise other_passphrase()
    _, _, nonce, sealed = envelope.split(".", 3)
    try:
        return await platform.crypto.unseal(key.key, nonce, sealed, _aad(key_id, name))
    except CryptoRefused:
        raise damaged() from None


def new_key_parameters() -> dict[str, Any]:
    return {
        "kdf": "PBKDF2-SHA256",
        "iterations": ITERATIONS,
        "salt": _b64(secrets.token_bytes(16)),
        "keyId": secrets.token_hex(6),
    }


async def derive(platform: Platform, passphrase: str, parameters: dict[str, Any]) -> SyncKey:
    key = await platform.crypto.derive_key(passphrase, parameters["salt"], int(parameters["iterations"]))
    return SyncKey(parameters["keyId"], key)


async def key_check_text(platform: Platform, key: SyncKey, parameters: dict[str, Any]) -> str:
    """The key check object (rule 4), as stored: JSON with the parameters and the sealed text."""
    check = await seal(platform, key, KEY_CHECK_NAME, KEY_CHECK_TEXT)
    return json.dumps({"margin": "sync", "format": 1, **parameters, "check": check})


def read_key_check(text: str) -> dict[str, Any]:
    """The parameters of a stored key check; `damaged` when it is not one."""
    try:
        value = json.loads(text)
    except ValueError:
        raise damaged() from None
    if not (
        isinstance(value, dict)
        and value.get("margin") == "sync"
        and value.get("kdf") == "PBKDF2-SHA256"
        and isinstance(value.get("salt"), str)
        and isinstance(value.get("keyId"), str)
        and isinstance(value.get("check"), str)
        and isinstance(value.get("iterations"), int)
        and MIN_ITERATIONS <= value["iterations"] <= MAX_ITERATIONS
    ):
        raise damaged()
    return value


async def open_key_check(platform: Platform, passphrase: str, text: str) -> SyncKey:
    """The key the passphrase gives, when it opens the key check; else `wrong_passphrase`."""
    parameters = read_key_check(text)
    key = await derive(platform, passphrase, parameters)
    try:
        if await unseal(platform, key, KEY_CHECK_NAME, parameters["check"]) == KEY_CHECK_TEXT:
            return key
    except MarginError:
        pass
    raise wrong_passphrase()
