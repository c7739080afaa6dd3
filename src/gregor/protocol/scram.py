"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka uses them: sans-IO exchanges.

Shared by the broker (the server side), the controller (credentials from a salted password) and
the client. Kafka's mechanism ids in the metadata log and the AlterUserScramCredentials API are
1 (SCRAM-SHA-256) and 2 (SCRAM-SHA-512); iterations must lie within 4096..16384 as in Kafka.
Channel binding is not supported (gs2 header `n,,`), as in Kafka; the `tokenauth` extension of
delegation tokens is refused.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Callable

#: Kafka's ScramMechanism ids.
MECHANISM_IDS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MECHANISM_NAMES = {number: name for name, number in MECHANISM_IDS.items()}
_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
_GS2_HEADER = "n,,"


class ScramError(ValueError):
    """A SCRAM message that is malformed or does not authenticate; its text is safe to log."""


@dataclass(frozen=True)
class ScramCredential:
    """What a server stores for one user and mechanism (never the password)."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hash(mechanism: str) -> str:
    try:
        return _HASHES[mechanism]
    except KeyError:
        raise ScramError(f"unknown SCRAM mechanism {mechanism}") from None


def _hmac(mechanism: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, _hash(mechanism)).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i) of RFC 5802: PBKDF2 with the mechanism's HMAC."""
    return hashlib.pbkdf2_hmac(_hash(mechanism), password.encode(), salt, iterations)


def credential_from_salted(mechanism: str, salted: bytes, salt: bytes, iterations: int) -> ScramCredential:
    client_key = _hmac(mechanism, salted, b"Client Key")
    stored_key = hashlib.new(_hash(mechanism), client_key).digest()
    return ScramCredential(salt, stored_key, _hmac(mechanism, salted, b"Server Key"), iterations)


def new_credential(mechanism: str, password: str, iterations: int = MIN_ITERATIONS,
                   salt: bytes | None = None) -> ScramCredential:
    salt = salt if salt is not None else secrets.token_bytes(32)
    return credential_from_salted(mechanism, salted_password(mechanism, password, salt, iterations), salt, iterations)


def _attributes(message: str) -> dict[str, str]:
    values: dict[str, str] = {}
    for part in message.split(","):
        name, sep, value = part.partition("=")
        if not sep or len(name) != 1:
            raise ScramError(f"malformed SCRAM attribute '{part}'")
        values.setdefault(name, value)
    return values


def _escape_name(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _unescape_name(name: str) -> str:
    if "=" in name.replace("=3D", "").replace("=2C", ""):
        raise ScramError("malformed SCRAM user name")
    return name.replace("=2C", ",").replace("=3D", "=")


def _xor(left: bytes, right: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(left, right))


def _nonce() -> str:
    return base64.b64encode(secrets.token_bytes(24)).decode().rstrip("=").replace("+", "-").replace("/", "_")


class ScramServer:
    """One server side exchange: `first()` takes client-first and returns server-first, `final()`
    takes client-final and returns server-final once the proof is right. `lookup(user)` gives the
    user's credential for this mechanism, or None; an unknown user fails at the proof, like a
    wrong password (an unknown user gets a made-up salt, so the two look the same on the wire)."""

    def __init__(self, mechanism: str, lookup: Callable[[str], ScramCredential | None],
                 nonce: Callable[[], str] = _nonce) -> None:
        _hash(mechanism)
        self.mechanism = mechanism
        self._lookup = lookup
        self._new_nonce = nonce
        self.user = ""
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""

    def first(self, client_first: bytes) -> bytes:
        text = client_first.decode("utf-8", "replace")
        if not text.startswith(("n,", "y,")):
            raise ScramError("SCRAM channel binding is not supported")
        _, authzid, bare = text.split(",", 2) if text.count(",") >= 2 else ("", "", "")
        if not bare:
            raise ScramError("malformed SCRAM client-first message")
        attributes = _attributes(bare)
        if "n" not in attributes or "r" not in attributes or not attributes["r"]:
            raise ScramError("SCRAM client-first message without user name or nonce")
        self.user = _unescape_name(attributes["n"])
        if authzid and authzid[2:] != self.user:
            raise ScramError("SCRAM authorization id differs from the user name")
        if attributes.get("e") is not None or "tokenauth" in bare:
            raise ScramError("SCRAM extensions (delegation tokens) are not supported")
        self._credential = self._lookup(self.user)
        credential = self._credential or new_credential(self.mechanism, secrets.token_hex(8), MIN_ITERATIONS)
        self._client_first_bare = bare
        self._nonce = attributes["r"] + self._new_nonce()
        self._server_first = (f"r={self._nonce},s={base64.b64encode(credential.salt).decode()},"
                              f"i={credential.iterations}")
        return self._server_first.encode()

    def final(self, client_final: bytes) -> bytes:
        text = client_final.decode("utf-8", "replace")
        without_proof, sep, proof_text = text.rpartition(",p=")
        if not sep:
            raise ScramError("SCRAM client-final message without proof")
        attributes = _attributes(without_proof)
        # Kafka checks that the nonce ends with the server-first one (librdkafka before 2.1 sends the
        # client part twice); the proof covers the message as sent either way.
        if not attributes.get("r", "").endswith(self._nonce):
            raise ScramError("Invalid client nonce in the final client message.")
        if attributes.get("c") not in (base64.b64encode(_GS2_HEADER.encode()).decode(),
                                       base64.b64encode(f"n,a={_escape_name(self.user)},".encode()).decode()):
            raise ScramError("SCRAM channel binding is not supported")
        try:
            proof = base64.b64decode(proof_text, validate=True)
        except ValueError:
            raise ScramError("malformed SCRAM proof") from None
        credential = self._credential
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        if credential is None:
            raise ScramError(f"Authentication failed during authentication due to invalid credentials with "
                             f"SASL mechanism {self.mechanism}")
        signature = _hmac(self.mechanism, credential.stored_key, auth_message)
        client_key = _xor(proof, signature)
        if len(proof) != len(signature) or not hmac.compare_digest(
                hashlib.new(_hash(self.mechanism), client_key).digest(), credential.stored_key):
            raise ScramError(f"Authentication failed during authentication due to invalid credentials with "
                             f"SASL mechanism {self.mechanism}")
        server_signature = _hmac(self.mechanism, credential.server_key, auth_message)
        return f"v={base64.b64encode(server_signature).decode()}".encode()


class ScramClient:
    """One client side exchange: `first()`, then `final(server_first)`, then `verify(server_final)`."""

    def __init__(self, mechanism: str, user: str, password: str, nonce: Callable[[], str] = _nonce) -> None:
        _hash(mechanism)
        self.mechanism = mechanism
        self._user = user
        self._password = password
        self._nonce = nonce()
        self._client_first_bare = f"n={_escape_name(user)},r={self._nonce}"
        self._server_signature = b""

    def first(self) -> bytes:
        return f"{_GS2_HEADER}{self._client_first_bare}".encode()

    def final(self, server_first: bytes) -> bytes:
        text = server_first.decode("utf-8", "replace")
        attributes = _attributes(text)
        if "e" in attributes:
            raise ScramError(f"SCRAM server error: {attributes['e']}")
        nonce, salt, iterations = attributes.get("r", ""), attributes.get("s"), attributes.get("i", "")
        if not nonce.startswith(self._nonce) or len(nonce) == len(self._nonce) or salt is None \
                or not iterations.isdigit():
            raise ScramError("malformed SCRAM server-first message")
        salted = salted_password(self.mechanism, self._password, base64.b64decode(salt), int(iterations))
        without_proof = f"c={base64.b64encode(_GS2_HEADER.encode()).decode()},r={nonce}"
        auth_message = f"{self._client_first_bare},{text},{without_proof}".encode()
        client_key = _hmac(self.mechanism, salted, b"Client Key")
        stored_key = hashlib.new(_hash(self.mechanism), client_key).digest()
        proof = _xor(client_key, _hmac(self.mechanism, stored_key, auth_message))
        self._server_signature = _hmac(self.mechanism, _hmac(self.mechanism, salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify(self, server_final: bytes) -> None:
        attributes = _attributes(server_final.decode("utf-8", "replace"))
        if "e" in attributes:
            raise ScramError(f"SCRAM server error: {attributes['e']}")
        if not hmac.compare_digest(base64.b64decode(attributes.get("v", "")), self._server_signature):
            raise ScramError("SCRAM server signature does not match: the server does not know the credential")
