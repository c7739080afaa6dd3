"""`gregor configs` for client quotas (users and client ids), as kafka-configs.sh manages them.

An entity is a user, a client id, or both: `--entity-type users|clients` with `--entity-name` or
`--entity-default`, or the shorthands `--user NAME`, `--user-defaults`, `--client NAME`,
`--client-defaults` (combine --user and --client for a user's quota on one client id). Quota
values are Kafka's keys (producer_byte_rate, consumer_byte_rate, request_percentage,
controller_mutation_rate).
"""

from __future__ import annotations

import argparse

from gregor.cli.common import ToolError, UsageError, explain, read_properties_file
from gregor.client import AdminClient
from gregor.client.acls import QuotaAlteration

USER, CLIENT_ID = "user", "client-id"
MATCH_EXACT, MATCH_DEFAULT = 0, 1
KINDS = {"users": USER, "clients": CLIENT_ID}


def quota_entity(args: argparse.Namespace) -> dict[str, str | None] | None:
    """The quota entity the flags name; None when they name a topic or broker instead."""
    entity: dict[str, str | None] = {}
    if args.entity_type in KINDS:
        if args.entity_default == (args.entity_name is not None):
            raise UsageError(f"--entity-type {args.entity_type} needs --entity-name NAME or --entity-default")
        entity[KINDS[args.entity_type]] = None if args.entity_default else args.entity_name
    for kind, name, default in ((USER, args.user, args.user_defaults), (CLIENT_ID, args.client, args.client_defaults)):
        if name is None and not default:
            continue
        if kind in entity or (name is not None and default):
            raise UsageError(f"name the {kind} once: one of --entity-name, --{kind.split('-')[0]}, "
                             f"--{kind.split('-')[0]}-defaults")
        entity[kind] = name
    return entity or None


def _label(entity: dict[str, str | None]) -> str:
    parts = [("the default " if name is None else "") + ("user-principal" if kind == USER else "client-id")
             + ("" if name is None else f" '{name}'") for kind, name in sorted(entity.items(), reverse=True)]
    return ", ".join(parts)


def describe(admin: AdminClient, entity: dict[str, str | None]) -> int:
    components = [(kind, MATCH_DEFAULT if name is None else MATCH_EXACT, name) for kind, name in entity.items()]
    for found, values in admin.describe_client_quotas(components, strict=True):
        shown = ", ".join(f"{key}={value}" for key, value in sorted(values.items()))
        print(f"Quota configs for {_label(dict(found))} are {shown}")
    return 0


def alter(admin: AdminClient, args: argparse.Namespace, entity: dict[str, str | None],
          additions: list[tuple[str, str]], deletions: list[str]) -> int:
    values: dict[str, float | None] = {}
    for key, text in [*read_properties_file(args.add_config_file).items(), *additions]:
        try:
            values[key] = float(text)
        except ValueError:
            raise UsageError(f"--add-config {key}={text}: a quota is a number") from None
    values.update({key: None for key in deletions})
    if not values:
        raise UsageError("--alter needs --add-config, --add-config-file or --delete-config")
    error = admin.alter_client_quotas([QuotaAlteration(entity, values)])[0]
    if error is not None:
        raise ToolError(f"cannot update the quotas of {_label(entity)}: {explain(error, args)}")
    print(f"Completed updating config for {_label(entity)}.")
    return 0
