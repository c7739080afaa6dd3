"""kafka-storage.sh's `--add-scram` argument: `MECHANISM=[name=alice,password=alice-secret]`, with
optional `iterations` (default 4096), `salt` (base64, default random) and `saltedpassword` (base64,
with `salt`, instead of `password`); a value may be quoted ("..."). Kafka's rules and messages."""

from __future__ import annotations

import base64
import binascii
import secrets

from gregor.controller.scram_control import ScramUpsertion
from gregor.protocol.scram import MAX_ITERATIONS, MECHANISM_IDS, MIN_ITERATIONS, salted_password

DEFAULT_ITERATIONS = 4096


class ScramArgumentError(ValueError):
    """An --add-scram argument Kafka's tool would refuse, with its message."""


def _base64(value: str, what: str) -> bytes:
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ScramArgumentError(f"Failed to decode given {what}: {value}") from None


def _components(text: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for component in text.split(","):
        key, sep, value = component.partition("=")
        if not sep:
            raise ScramArgumentError(f"No equals sign found in SCRAM component: {component}")
        if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
            value = value[1:-1]
        found[key] = value
    return found


def parse_scram(argument: str) -> ScramUpsertion:
    """One --add-scram argument as the credential to write (the password salted and hashed here)."""
    text = argument.strip()
    mechanism, sep, rest = text.partition("=")
    if not sep:
        raise ScramArgumentError(f"Failed to find equals sign in SCRAM argument '{text}'")
    if mechanism not in MECHANISM_IDS:
        raise ScramArgumentError(f"The add-scram mechanism {mechanism} is not supported.")
    if not rest.startswith("["):
        raise ScramArgumentError("Expected configuration string to start with [")
    if not rest.endswith("]"):
        raise ScramArgumentError("Expected configuration string to end with ]")
    components = _components(rest[1:-1])
    name = components.pop("name", None)
    if name is None:
        raise ScramArgumentError("You must supply 'name' to add-scram")
    salt_text = components.pop("salt", None)
    salt = _base64(salt_text, "salt") if salt_text is not None else secrets.token_bytes(32)
    iterations_text = components.pop("iterations", None)
    try:
        iterations = DEFAULT_ITERATIONS if iterations_text is None else int(iterations_text)
    except ValueError:
        raise ScramArgumentError(f"Failed to parse iterations count: {iterations_text}") from None
    password = components.pop("password", None)
    salted_text = components.pop("saltedpassword", None)
    if password is None and salted_text is None:
        raise ScramArgumentError("You must supply one of 'password' or 'saltedpassword' to add-scram")
    if password is None and salt_text is None:
        raise ScramArgumentError("You must supply 'salt' with 'saltedpassword' to add-scram")
    if components:
        raise ScramArgumentError(f"Unknown SCRAM configurations: {', '.join(sorted(components))}")
    if iterations < MIN_ITERATIONS:
        raise ScramArgumentError(f"The 'iterations' value must be >= {MIN_ITERATIONS} for add-scram using "
                                 f"{mechanism}")
    if iterations > MAX_ITERATIONS:
        raise ScramArgumentError(f"The 'iterations' value must be <= {MAX_ITERATIONS} for add-scram using "
                                 f"{mechanism}")
    salted = salted_password(mechanism, password, salt, iterations) if password is not None \
        else _base64(salted_text or "", "saltedPassword")
    return ScramUpsertion(name, MECHANISM_IDS[mechanism], iterations, salt, salted)
