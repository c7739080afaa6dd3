"""`gregor configs`: describe and change topic, broker and group configs, client quotas and users' SCRAM
credentials, as kafka-configs.sh (quotas: `quota_configs`; SCRAM: `user_configs`).

With --bootstrap-controller (KIP-919) it talks to the controllers' listener: broker configs only,
a controller's own (its listener stores, reloaded at once) or the cluster default. Kafka's tool
also sends the other entity types there; Gregor's controllers answer only DescribeConfigs of
broker resources, so the tool refuses the others with one line instead of a protocol error."""

from __future__ import annotations

import argparse

from gregor.cli import quota_configs, user_configs
from gregor.cli.common import (
    ToolError, UsageError, add_connection_options, add_tool, explain, guarded, one_action, open_admin,
    read_properties_file,
)
from gregor.client import AdminClient, KafkaException
from gregor.client.admin import (
    AlterConfigOp, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource, ResourceType,
)

ENTITY_TYPES = {"topics": ResourceType.TOPIC, "brokers": ResourceType.BROKER, "groups": ResourceType.GROUP}
QUOTA_ENTITY_TYPES = ("users", "clients", "ips")
DYNAMIC_SOURCES = {
    ResourceType.TOPIC: {ConfigSource.DYNAMIC_TOPIC_CONFIG},
    ResourceType.BROKER: {ConfigSource.DYNAMIC_BROKER_CONFIG, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG},
    ResourceType.GROUP: {ConfigSource.GROUP_CONFIG},
}
SINGULAR = {ResourceType.TOPIC: "topic", ResourceType.BROKER: "broker", ResourceType.GROUP: "group"}

EPILOG = """examples:
  gregor configs --bootstrap-server localhost:9092 --describe --entity-type topics --entity-name orders
  gregor configs --bootstrap-server localhost:9092 --alter --entity-type groups --entity-name billing \\
      --add-config consumer.session.timeout.ms=50000
  gregor configs --bootstrap-server localhost:9092 --describe --topic orders --all
  gregor configs --bootstrap-server localhost:9092 --alter --topic orders \\
      --add-config retention.ms=86400000,cleanup.policy=[compact,delete]
  gregor configs --bootstrap-server localhost:9092 --alter --topic orders --delete-config retention.ms
  gregor configs --bootstrap-server localhost:9092 --describe --broker 1
  gregor configs --bootstrap-server localhost:9092 --alter --entity-type brokers --entity-default \\
      --add-config log.retention.ms=3600000
  gregor configs --bootstrap-server localhost:9092 --alter --entity-type users --entity-name alice \
      --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
  gregor configs --bootstrap-server localhost:9092 --alter --user alice --client reports \
      --add-config producer_byte_rate=65536
  gregor configs --bootstrap-server localhost:9092 --describe --entity-type clients --entity-default
  gregor configs --bootstrap-server localhost:9092 --alter --entity-type users --entity-name alice \\
      --add-config 'SCRAM-SHA-256=[iterations=8192,password=alice-secret]'
  gregor configs --bootstrap-controller localhost:9093 --command-config admin-ssl.properties \\
      --alter --entity-type brokers --entity-name 1 \\
      --add-config listener.name.controller.ssl.keystore.location=/etc/gregor/renewed.pem
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "configs", "describe and change topic, broker and group configs and client quotas",
                      "Describe and change the dynamic configs of topics, brokers and groups and the quotas of users "
                      "and client ids (kafka-configs.sh).", EPILOG)
    add_connection_options(parser, controllers=True)
    actions = parser.add_argument_group("actions (exactly one)")
    actions.add_argument("--describe", action="store_true", help="show configs")
    actions.add_argument("--alter", action="store_true", help="set or delete configs")
    parser.add_argument("--entity-type", choices=sorted([*ENTITY_TYPES, *QUOTA_ENTITY_TYPES]),
                        help="topics, brokers, groups, users, clients or ips")
    parser.add_argument("--entity-name", metavar="NAME", help="the topic name, broker id, group id, user or client id")
    parser.add_argument("--entity-default", action="store_true",
                        help="with brokers: the cluster-wide default; with users or clients: the default quota")
    parser.add_argument("--user", metavar="NAME", help="a user's quotas (with --client: on that client id)")
    parser.add_argument("--user-defaults", action="store_true", help="the default user quotas")
    parser.add_argument("--client", metavar="ID", help="a client id's quotas")
    parser.add_argument("--client-defaults", action="store_true", help="the default client-id quotas")
    parser.add_argument("--ip", metavar="ADDRESS", help="an IP address's quotas (connection_creation_rate)")
    parser.add_argument("--ip-defaults", action="store_true", help="the default IP address quotas")
    parser.add_argument("--topic", metavar="TOPIC", help="shorthand for --entity-type topics --entity-name TOPIC")
    parser.add_argument("--broker", metavar="ID", help="shorthand for --entity-type brokers --entity-name ID")
    parser.add_argument("--group", metavar="GROUP", help="shorthand for --entity-type groups --entity-name GROUP")
    parser.add_argument("--broker-defaults", action="store_true",
                        help="shorthand for --entity-type brokers --entity-default")
    parser.add_argument("--all", action="store_true", help="with --describe: every config, not only dynamic ones")
    parser.add_argument("--add-config", metavar="K=V,K2=[A,B]", help="configs to set")
    parser.add_argument("--add-config-file", metavar="FILE", help="a properties file of configs to set")
    parser.add_argument("--delete-config", metavar="K,K2", help="configs to remove (back to their default)")
    parser.set_defaults(run=run)


@guarded("configs")
def run(args: argparse.Namespace) -> int:
    action = one_action(args, ("--describe", "--alter"))
    quota_entity = quota_configs.quota_components(args)
    if quota_entity is not None:
        _refuse_at_controllers(args, "users, clients and ips")
        return _quotas(args, action, quota_entity)
    kind, name = _entity(args)
    if kind != ResourceType.BROKER:
        _refuse_at_controllers(args, "topics and groups")
    if action == "--describe" and (args.add_config or args.add_config_file or args.delete_config):
        raise UsageError("--add-config, --add-config-file and --delete-config work with --alter only")
    if action == "--alter":
        if args.all:
            raise UsageError("--all works with --describe only")
        if name is None and not args.entity_default and not args.broker_defaults:
            raise UsageError("--alter needs an entity: --entity-name NAME, --topic TOPIC, --broker ID or --group GROUP")
    admin = open_admin(args)
    try:
        if action == "--describe":
            return describe(admin, args, kind, name)
        return alter(admin, args, kind, name)
    finally:
        admin.close()


def _refuse_at_controllers(args: argparse.Namespace, what: str) -> None:
    if args.bootstrap_controller:
        raise UsageError(f"the configs of {what} are managed through the brokers: use --bootstrap-server "
                         f"(--bootstrap-controller works with --entity-type brokers only)")


def _quotas(args: argparse.Namespace, action: str, entity: list[quota_configs.Component]) -> int:
    """A user's or client id's quotas; for one user, its SCRAM credentials too (the SCRAM-SHA-*
    keys), as kafka-configs.sh sends them with AlterUserScramCredentials."""
    if args.topic is not None or args.broker is not None or args.group is not None or args.broker_defaults or args.all:
        raise UsageError("a quota entity (users, clients, ips) cannot be combined with --topic, --broker, --group "
                         "or --all")
    users_only = [kind for kind, _, _ in entity] == [quota_configs.USER]
    scram_user = entity[0][2] if users_only and entity[0][1] == quota_configs.MATCH_EXACT else None
    admin = open_admin(args)
    try:
        if action == "--describe":
            if args.add_config or args.add_config_file or args.delete_config:
                raise UsageError("--add-config, --add-config-file and --delete-config work with --alter only")
            quota_configs.describe(admin, entity)
            if users_only and entity[0][1] != quota_configs.MATCH_DEFAULT:
                user_configs.describe(admin, args, scram_user, missing_ok=True)
            return 0
        additions = split_config_list(args.add_config or "")
        deletions = [key.strip() for key in (args.delete_config or "").split(",") if key.strip()]
        scram_additions = {key: value for key, value in additions if user_configs.is_scram(key)}
        scram_deletions = [key for key in deletions if user_configs.is_scram(key)]
        if not scram_additions and not scram_deletions:
            return quota_configs.alter(admin, args, entity, additions, deletions)
        if scram_user is None:
            raise UsageError("SCRAM credentials belong to one user: --entity-type users --entity-name NAME")
        quota_additions = [(key, value) for key, value in additions if not user_configs.is_scram(key)]
        quota_deletions = [key for key in deletions if not user_configs.is_scram(key)]
        quotas_too = bool(quota_additions or quota_deletions or args.add_config_file)
        user_configs.alter(admin, args, scram_user, scram_additions, scram_deletions, announce=not quotas_too)
        if quotas_too:
            return quota_configs.alter(admin, args, entity, quota_additions, quota_deletions)
        return 0
    finally:
        admin.close()


def _changes(args: argparse.Namespace) -> tuple[dict[str, str], list[str]]:
    """--add-config (and its file) and --delete-config, checked against each other."""
    additions = dict(read_properties_file(args.add_config_file))
    additions.update(split_config_list(args.add_config or ""))
    deletions = [key.strip() for key in (args.delete_config or "").split(",") if key.strip()]
    if not additions and not deletions:
        raise UsageError("--alter needs --add-config, --add-config-file or --delete-config")
    both = sorted(set(additions) & set(deletions))
    if both:
        raise UsageError(f"config {both[0]} is both added and deleted")
    return additions, deletions


def _entity(args: argparse.Namespace) -> tuple[ResourceType, str | None]:
    """The entity from --entity-type/--entity-name or the --topic/--broker shorthands."""
    chosen = [flag for flag, given in (("--entity-type", args.entity_type), ("--topic", args.topic),
                                       ("--broker", args.broker), ("--group", args.group),
                                       ("--broker-defaults", args.broker_defaults))
              if given]
    if len(chosen) != 1:
        raise UsageError("name the entity with one of --entity-type (and --entity-name or --entity-default), "
                         "--topic, --broker, --group, --broker-defaults")
    if args.topic is not None:
        return ResourceType.TOPIC, args.topic
    if args.broker is not None:
        return ResourceType.BROKER, args.broker
    if args.group is not None:
        return ResourceType.GROUP, args.group
    if args.broker_defaults:
        return ResourceType.BROKER, ""
    kind = ENTITY_TYPES[args.entity_type]
    if args.entity_default:
        if kind != ResourceType.BROKER:
            raise UsageError("--entity-default works with --entity-type brokers only")
        if args.entity_name is not None:
            raise UsageError("give --entity-name or --entity-default, not both")
        return kind, ""
    if kind == ResourceType.BROKER and args.entity_name is not None and not args.entity_name.isdigit():
        raise UsageError(f"--entity-name of a broker is its id (an integer), got {args.entity_name!r}")
    return kind, args.entity_name


def _label(kind: ResourceType, name: str) -> str:
    if kind == ResourceType.BROKER and name == "":
        return "default config for brokers in the cluster"
    return f"config for {SINGULAR[kind]} {name}"


def describe(admin: AdminClient, args: argparse.Namespace, kind: ResourceType, name: str | None) -> int:
    if name is not None:
        names = [name]
    elif kind == ResourceType.TOPIC:
        names = sorted(admin.list_topics())
    elif kind == ResourceType.GROUP:
        names = sorted({listing.group_id for listing in admin.list_consumer_groups()}
                       | {listing.group_id for listing in admin.list_share_groups()})
    else:
        names = [str(node.node_id) for node in admin.describe_cluster().nodes]
    resources = [ConfigResource(kind, each) for each in names]
    results = admin.describe_configs(resources, include_synonyms=True)
    for resource in resources:
        entries = results[resource]
        if isinstance(entries, KafkaException):
            raise ToolError(f"cannot describe the {_label(kind, resource.name)}: {explain(entries, args)}")
        shown = list(entries.values()) if args.all else [
            entry for entry in entries.values() if entry.source in DYNAMIC_SOURCES[kind]]
        what = "All" if args.all else "Dynamic"
        if resource.name == "":
            print(f"{'All' if args.all else 'Default'} configs for brokers in the cluster are:")
        else:
            print(f"{what} configs for {SINGULAR[kind]} {resource.name} are:")
        for entry in shown:
            print(f"  {_entry_text(entry)}")
    return 0


def _entry_text(entry: ConfigEntry) -> str:
    value = _shown(None if entry.is_sensitive else entry.value)
    synonyms = ", ".join(f"{synonym.source.name}:{synonym.name}={_shown(None if entry.is_sensitive else synonym.value)}"
                         for synonym in entry.synonyms)
    return f"{entry.name}={value} sensitive={str(entry.is_sensitive).lower()} synonyms={{{synonyms}}}"


def _shown(value: str | None) -> str:
    """Java prints a missing value as null."""
    return "null" if value is None else value


def split_config_list(text: str) -> list[tuple[str, str]]:
    """`k=v,k2=[a,b]` into pairs; brackets keep a list value's commas, as kafka-configs.sh."""
    pairs: list[tuple[str, str]] = []
    depth = 0
    item = ""
    for char in text + ",":
        if char == "," and depth == 0:
            if item.strip():
                key, sep, value = item.partition("=")
                if not sep or not key.strip():
                    raise UsageError(f"--add-config: expected key=value, got {item.strip()!r}")
                value = value.strip()
                if value.startswith("[") and value.endswith("]"):
                    value = value[1:-1]
                pairs.append((key.strip(), value))
            item = ""
            continue
        depth += {"[": 1, "]": -1}.get(char, 0)
        item += char
    if depth != 0:
        raise UsageError(f"--add-config {text!r}: unbalanced brackets")
    return pairs


def alter(admin: AdminClient, args: argparse.Namespace, kind: ResourceType, name: str | None) -> int:
    resource = ConfigResource(kind, name or "")
    additions, deletions = _changes(args)
    if kind == ResourceType.TOPIC:
        found = admin.describe_topics([resource.name])[resource.name]
        if isinstance(found, KafkaException):
            raise ToolError(f"topic '{resource.name}' does not exist (see 'gregor topics --list')")
    operations = [AlterConfigOp(key, value, AlterConfigOpType.SET) for key, value in additions.items()]
    operations += [AlterConfigOp(key, None, AlterConfigOpType.DELETE) for key in deletions]
    error = admin.incremental_alter_configs({resource: operations})[resource]
    if error is not None:
        raise ToolError(f"cannot update the {_label(kind, resource.name)}: {explain(error, args)}")
    print(f"Completed updating {_label(kind, resource.name)}.")
    return 0
