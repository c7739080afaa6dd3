"""`gregor configs` for client quotas (users, client ids and IP addresses), as kafka-configs.sh
manages them.

An entity is a user, a client id, or both: `--entity-type users|clients` with `--entity-name` or
`--entity-default`, or the shorthands `--user NAME`, `--user-defaults`, `--client NAME`,
`--client-defaults` (combine --user and --client for a user's quota on one client id); or an
address, `--entity-type ips` (or `--ip ADDRESS`, `--ip-defaults`), whose quota is
connection_creation_rate.
`--describe --entity-type users` without a name lists every named user's quotas. Quota values
are Kafka's keys (producer_byte_rate, consumer_byte_rate, request_percentage,
controller_mutation_rate).
"""

from __future__ import annotations

import argparse

from gregor.cli.common import ToolError, UsageError, explain, read_properties_file
from gregor.client import AdminClient
from gregor.client.acls import QuotaAlteration

USER, CLIENT_ID, IP = "user", "client-id", "ip"
MATCH_EXACT, MATCH_DEFAULT, MATCH_SPECIFIED = 0, 1, 2
KINDS = {"users": USER, "clients": CLIENT_ID, "ips": IP}
_LABELS = {USER: "user-principal", CLIENT_ID: "client-id", IP: "ip"}

#: (entity type, match type, name): DescribeClientQuotas' filter components
Component = tuple[str, int, "str | None"]


def quota_components(args: argparse.Namespace) -> list[Component] | None:
    """The quota entity the flags name, as filter components; None when they name a topic or
    broker instead. A type without a name or default matches every named entity of the type."""
    components: dict[str, Component] = {}
    if args.entity_type in KINDS:
        kind = KINDS[args.entity_type]
        if args.entity_default and args.entity_name is not None:
            raise UsageError("give --entity-name or --entity-default, not both")
        if args.entity_default:
            components[kind] = (kind, MATCH_DEFAULT, None)
        elif args.entity_name is not None:
            components[kind] = (kind, MATCH_EXACT, args.entity_name)
        else:
            components[kind] = (kind, MATCH_SPECIFIED, None)
    for kind, name, default, flag in ((USER, args.user, args.user_defaults, "user"),
                                      (CLIENT_ID, args.client, args.client_defaults, "client"),
                                      (IP, args.ip, args.ip_defaults, "ip")):
        if name is None and not default:
            continue
        if kind in components or (name is not None and default):
            raise UsageError(f"name the {kind} once: one of --entity-name, --{flag}, --{flag}-defaults")
        components[kind] = (kind, MATCH_DEFAULT, None) if default else (kind, MATCH_EXACT, name)
    return list(components.values()) or None


def _label(entity: dict[str, str | None]) -> str:
    parts = [("the default " if name is None else "") + _LABELS[kind] + ("" if name is None else f" '{name}'")
             for kind, name in sorted(entity.items(), reverse=True)]
    return ", ".join(parts)


def describe(admin: AdminClient, components: list[Component]) -> int:
    for found, values in admin.describe_client_quotas(components, strict=True):
        shown = ", ".join(f"{key}={value}" for key, value in sorted(values.items()))
        print(f"Quota configs for {_label(dict(found))} are {shown}")
    return 0


def alter(admin: AdminClient, args: argparse.Namespace, components: list[Component],
          additions: list[tuple[str, str]], deletions: list[str]) -> int:
    if any(match == MATCH_SPECIFIED for _, match, _ in components):
        raise UsageError("--alter needs an entity: --entity-name NAME or --entity-default")
    entity = {kind: name for kind, _, name in components}
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
