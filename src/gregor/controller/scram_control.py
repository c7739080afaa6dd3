"""SCRAM credentials in the metadata log (Kafka's ScramControlManager): AlterUserScramCredentials
turns upsertions into UserScramCredentialRecords (the stored and server keys derived from the
salted password the client sent; the password itself never reaches the broker) and deletions into
RemoveUserScramCredentialRecords. A user with any refused change keeps all its credentials as they
were; the answer has one result per user, as in Kafka.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from gregor.controller.operations import ControllerResult
from gregor.metadata.image import MetadataImage
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import RemoveUserScramCredentialRecord, UserScramCredentialRecord
from gregor.protocol.scram import MAX_ITERATIONS, MECHANISM_NAMES, MIN_ITERATIONS, credential_from_salted


@dataclass(frozen=True)
class ScramUpsertion:
    user: str
    mechanism: int
    iterations: int
    salt: bytes
    salted_password: bytes


@dataclass(frozen=True)
class ScramDeletion:
    user: str
    mechanism: int


@dataclass(frozen=True)
class ScramAlterResult:
    user: str
    error: int = ErrorCode.NONE
    message: str | None = None


def _check(image: MetadataImage, change: ScramUpsertion | ScramDeletion) -> tuple[int, str] | None:
    if not change.user:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    if change.mechanism not in MECHANISM_NAMES:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if isinstance(change, ScramDeletion):
        if (change.user, change.mechanism) not in image.scram_credentials:
            return ErrorCode.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist"
        return None
    if change.iterations < MIN_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
    if change.iterations > MAX_ITERATIONS:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    if not change.salt or not change.salted_password:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Salt and salted password must not be empty"
    return None


def alter_user_scram_credentials(image: MetadataImage, deletions: Sequence[ScramDeletion],
                                 upsertions: Sequence[ScramUpsertion]) -> ControllerResult[list[ScramAlterResult]]:
    changes: list[ScramDeletion | ScramUpsertion] = [*deletions, *upsertions]
    users = list(dict.fromkeys(change.user for change in changes))
    seen: dict[tuple[str, int], int] = {}
    for change in changes:
        seen[(change.user, change.mechanism)] = seen.get((change.user, change.mechanism), 0) + 1
    results: list[ScramAlterResult] = []
    records: list[Any] = []
    for user in users:
        mine = [change for change in changes if change.user == user]
        failure: tuple[int, str] | None = None
        if any(seen[(user, change.mechanism)] > 1 for change in mine):
            failure = ErrorCode.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request"
        for change in mine:
            failure = failure or _check(image, change)
        if failure is not None:
            results.append(ScramAlterResult(user, *failure))
            continue
        for change in mine:
            if isinstance(change, ScramDeletion):
                records.append(RemoveUserScramCredentialRecord(name=user, mechanism=change.mechanism))
                continue
            credential = credential_from_salted(MECHANISM_NAMES[change.mechanism], change.salted_password,
                                                change.salt, change.iterations)
            records.append(UserScramCredentialRecord(
                name=user, mechanism=change.mechanism, salt=credential.salt, stored_key=credential.stored_key,
                server_key=credential.server_key, iterations=credential.iterations))
        results.append(ScramAlterResult(user))
    return ControllerResult(results, tuple(records))
