"""Client quotas as the metadata log holds them (ClientQuotaRecord): values by entity.

An entity is a set of (entity type, name) components, `user` and/or `client-id` (and `ip`, which
Gregor stores but does not enforce); a None name is the entity type's default (`<default>` in
the tools). It is kept as a tuple sorted by type, so the same entity is one key however a client
ordered its components.
"""

from __future__ import annotations

from typing import Iterable

USER = "user"
CLIENT_ID = "client-id"
IP = "ip"
ENTITY_TYPES = frozenset({USER, CLIENT_ID, IP})

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
CONNECTION_CREATION_RATE = "connection_creation_rate"

#: The keys each entity kind may carry (Kafka's QuotaConfigs: the client keys for user and
#: client-id entities, the connection rate for ip entities).
CLIENT_KEYS = frozenset({PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE})
IP_KEYS = frozenset({CONNECTION_CREATION_RATE})
#: Keys whose value must be a whole number (Kafka types them LONG).
LONG_KEYS = frozenset({PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE, CONNECTION_CREATION_RATE})

QuotaEntity = tuple[tuple[str, "str | None"], ...]


def quota_entity(components: Iterable[tuple[str, str | None]]) -> QuotaEntity:
    return tuple(sorted(components, key=lambda component: component[0]))


def validate_quota_entity(entity: QuotaEntity) -> str | None:
    """Why `entity` is not one Kafka accepts (ClientQuotaControlManager.validateEntity), or None."""
    if not entity:
        return "Invalid empty client quota entity"
    types = [kind for kind, _ in entity]
    if len(set(types)) != len(types):
        return "Invalid quota entity: a component type appears twice"
    for kind, name in entity:
        if kind not in ENTITY_TYPES:
            return f"Unhandled client quota entity type: {kind}"
        if name is not None and not name and kind == USER:
            return "Invalid empty user name in the client quota entity"
    if IP in types and len(types) > 1:
        return "Invalid quota entity combination, IP entity should not be combined with User or ClientId"
    return None


def validate_quota_value(entity: QuotaEntity, key: str, value: float) -> str | None:
    """Why `key` = `value` cannot be set on `entity`, or None."""
    allowed = IP_KEYS if entity[0][0] == IP else CLIENT_KEYS
    if key not in allowed:
        return f"Unknown quota key {key} for the entity {describe_entity(entity)}"
    if key in LONG_KEYS and value != int(value):
        return f"Configuration {key} must be a Long value"
    if value <= 0:
        return f"Quota {key} must be greater than 0, not {value}"
    return None


def describe_entity(entity: QuotaEntity) -> str:
    return ", ".join(f"{kind}={'<default>' if name is None else name}" for kind, name in entity)
