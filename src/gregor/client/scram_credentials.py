"""SCRAM credentials as the admin client changes and reads them (AlterUserScramCredentials,
DescribeUserScramCredentials, KIP-554). The password is salted and hashed here, on the client:
only the salt, the iteration count and the salted password travel, as with Kafka's admin client."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from gregor.protocol.messages import AlterUserScramCredentialsRequest
from gregor.protocol.scram import MECHANISM_IDS, MECHANISM_NAMES, MIN_ITERATIONS, salted_password


@dataclass(frozen=True)
class ScramCredentialInfo:
    mechanism: str  # SCRAM-SHA-256 or SCRAM-SHA-512
    iterations: int


@dataclass(frozen=True)
class UserScramCredentialUpsertion:
    """Set `user`'s credential for `mechanism` to `password` (a fresh random salt unless given)."""

    user: str
    mechanism: str
    password: str | bytes
    iterations: int = MIN_ITERATIONS
    salt: bytes | None = None

    def to_request(self) -> AlterUserScramCredentialsRequest.ScramCredentialUpsertion:
        salt = self.salt if self.salt is not None else secrets.token_bytes(32)
        password = self.password.decode() if isinstance(self.password, bytes) else self.password
        return AlterUserScramCredentialsRequest.ScramCredentialUpsertion(
            name=self.user, mechanism=mechanism_id(self.mechanism), iterations=self.iterations, salt=salt,
            salted_password=salted_password(self.mechanism, password, salt, self.iterations))


@dataclass(frozen=True)
class UserScramCredentialDeletion:
    user: str
    mechanism: str

    def to_request(self) -> AlterUserScramCredentialsRequest.ScramCredentialDeletion:
        return AlterUserScramCredentialsRequest.ScramCredentialDeletion(
            name=self.user, mechanism=mechanism_id(self.mechanism))


def mechanism_id(name: str) -> int:
    """Kafka's id of a SCRAM mechanism name; ValueError for any other name."""
    try:
        return MECHANISM_IDS[name.upper()]
    except KeyError:
        raise ValueError(f"unknown SCRAM mechanism {name!r} (SCRAM-SHA-256 or SCRAM-SHA-512)") from None


def mechanism_name(number: int) -> str:
    return MECHANISM_NAMES.get(number, f"UNKNOWN({number})")
