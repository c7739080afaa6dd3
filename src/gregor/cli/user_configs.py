"""`gregor configs --entity-type users`: SCRAM credentials, as kafka-configs.sh sets them beside
a user's quotas (`quota_configs`).

`--add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'` (iterations default 4096)
sets a credential, `--delete-config SCRAM-SHA-512` removes one, `--describe` lists each user's
mechanisms and iteration counts (never a secret).
"""

from __future__ import annotations

import argparse

from gregor.cli.common import ToolError, UsageError, explain
from gregor.client import AdminClient, KafkaException
from gregor.client.scram_credentials import (
    UserScramCredentialDeletion, UserScramCredentialUpsertion, mechanism_id,
)
from gregor.protocol.scram import MECHANISM_IDS, MIN_ITERATIONS


def is_scram(key: str) -> bool:
    """A SCRAM credential key (`SCRAM-SHA-256`, `SCRAM-SHA-512`, or another `SCRAM-` one, refused later)."""
    return key.strip().upper().startswith("SCRAM-")


def _mechanism(key: str, flag: str) -> str:
    name = key.strip().upper()
    if name not in MECHANISM_IDS:
        raise UsageError(f"{flag}: {key} is not a SCRAM mechanism Gregor serves (SCRAM-SHA-256 or SCRAM-SHA-512)")
    return name


def _upsertion(user: str, key: str, value: str) -> UserScramCredentialUpsertion:
    mechanism = _mechanism(key, "--add-config")
    fields: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in value.split(","))):
        name, sep, text = item.partition("=")
        if not sep or name.strip() not in ("password", "iterations"):
            raise UsageError(f"--add-config {key}: expected [iterations=N,]password=SECRET, got {item!r}")
        fields[name.strip()] = text
    if "password" not in fields:
        raise UsageError(f"--add-config {key}: the credential needs password=SECRET")
    iterations = fields.get("iterations", str(MIN_ITERATIONS))
    if not iterations.isdigit():
        raise UsageError(f"--add-config {key}: iterations must be a number, got {iterations!r}")
    mechanism_id(mechanism)
    return UserScramCredentialUpsertion(user, mechanism, fields["password"], int(iterations))


def alter(admin: AdminClient, args: argparse.Namespace, user: str, additions: dict[str, str],
          deletions: list[str], announce: bool = True) -> None:
    """Set and delete `user`'s credentials; `announce` prints Kafka's completion line (left to the
    quota change that follows in the same command otherwise)."""
    changes: list[UserScramCredentialUpsertion | UserScramCredentialDeletion] = [
        _upsertion(user, key, value) for key, value in additions.items()]
    changes += [UserScramCredentialDeletion(user, _mechanism(key, "--delete-config")) for key in deletions]
    error = admin.alter_user_scram_credentials(changes).get(user)
    if error is not None:
        raise ToolError(f"cannot update the SCRAM credentials of user {user}: {explain(error, args)}")
    if announce:
        print(f"Completed updating config for user-principal '{user}'.")


def describe(admin: AdminClient, args: argparse.Namespace, user: str | None, missing_ok: bool = False) -> None:
    """One user's credentials (every user's for None); a user without any is an error unless
    `missing_ok` (its quotas were described instead)."""
    results = admin.describe_user_scram_credentials(None if user is None else [user])
    for name, infos in results.items():
        if isinstance(infos, KafkaException):
            if missing_ok and infos.name == "RESOURCE_NOT_FOUND":
                continue
            raise ToolError(f"cannot describe the SCRAM credentials of user {name}: {explain(infos, args)}")
        shown = ", ".join(f"{info.mechanism}=iterations={info.iterations}" for info in infos)
        print(f"SCRAM credential configs for user-principal '{name}' are {shown}")
