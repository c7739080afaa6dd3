"""`gregor topics`: create, list, describe, alter and delete topics, as kafka-topics.sh."""

from __future__ import annotations

import argparse
from typing import Callable

from gregor.cli.common import (
    ToolError, UsageError, add_connection_options, add_tool, explain, guarded, key_value, one_action, open_admin,
    properties_from, require, topic_matcher,
)
from gregor.client import AdminClient, KafkaException
from gregor.client.admin import ConfigResource, ConfigSource, NewTopic, ResourceType, TopicDescription
from gregor.client.network import PartitionMetadata
from gregor.protocol.error_codes import ErrorCode

ACTIONS = ("--create", "--list", "--describe", "--alter", "--delete")

EPILOG = """examples:
  gregor topics --bootstrap-server localhost:9092 --create --topic orders --partitions 3 \\
      --replication-factor 1 --config retention.ms=86400000
  gregor topics --bootstrap-server localhost:9092 --list
  gregor topics --bootstrap-server localhost:9092 --describe --topic 'orders|payments'
  gregor topics --bootstrap-server localhost:9092 --alter --topic orders --partitions 6
  gregor topics --bootstrap-server localhost:9092 --delete --topic orders --if-exists

--topic is a regular expression (matching whole names) for --list, --describe and --delete,
as in Kafka; quote it in the shell.
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "topics", "create, list, describe, alter and delete topics",
                      "Create, list, describe, alter and delete topics (kafka-topics.sh).", EPILOG)
    add_connection_options(parser)
    actions = parser.add_argument_group("actions (exactly one)")
    actions.add_argument("--create", action="store_true", help="create a topic")
    actions.add_argument("--list", action="store_true", help="list topic names")
    actions.add_argument("--describe", action="store_true", help="partitions, leaders, replicas, ISR and configs")
    actions.add_argument("--alter", action="store_true", help="increase the number of partitions")
    actions.add_argument("--delete", action="store_true", help="delete topics")
    parser.add_argument("--topic", metavar="TOPIC", help="a topic name, or a regex for list/describe/delete")
    parser.add_argument("--partitions", type=int, metavar="N",
                        help="partitions to create, or the new total with --alter")
    parser.add_argument("--replication-factor", type=int, metavar="N", help="replicas of each partition")
    parser.add_argument("--replica-assignment", metavar="B:B,B:B",
                        help="broker ids per partition for --create, e.g. 1:2,2:3 (partition 0 on 1 and 2 ...)")
    parser.add_argument("--config", type=key_value, action="append", metavar="KEY=VALUE",
                        help="a topic config for --create (repeatable)")
    parser.add_argument("--if-exists", action="store_true", help="with --alter/--describe/--delete: "
                                                                  "do nothing if the topic does not exist")
    parser.add_argument("--if-not-exists", action="store_true", help="with --create: do nothing if it exists")
    parser.add_argument("--exclude-internal", action="store_true", help="leave internal topics out")
    parser.add_argument("--topics-with-overrides", action="store_true",
                        help="with --describe: only topics whose configs differ from the defaults")
    parser.add_argument("--under-replicated-partitions", action="store_true",
                        help="with --describe: only partitions whose ISR is smaller than their replicas")
    parser.add_argument("--unavailable-partitions", action="store_true",
                        help="with --describe: only partitions without a leader")
    parser.set_defaults(run=run)


@guarded("topics")
def run(args: argparse.Namespace) -> int:
    action = one_action(args, ACTIONS)
    _check_options(args, action)
    handlers: dict[str, Callable[[AdminClient, argparse.Namespace], int]] = {
        "--create": create, "--list": list_topics, "--describe": describe, "--alter": alter, "--delete": delete,
    }
    admin = open_admin(args)
    try:
        return handlers[action](admin, args)
    finally:
        admin.close()


def _check_options(args: argparse.Namespace, action: str) -> None:
    """Kafka's TopicCommand option checks: which options each action needs and allows."""
    if action in ("--create", "--alter", "--delete"):
        require(args, "--topic", action=action)
    if args.topic is not None and action in ("--list", "--describe", "--delete"):
        topic_matcher(args.topic)
    if action == "--alter":
        require(args, "--partitions", action=action)
    if args.config and action != "--create":
        raise UsageError(f"--config works with --create only; change configs of a topic with "
                         f"'gregor configs --alter --topic {args.topic or 'NAME'} --add-config k=v'")
    if args.if_not_exists and action != "--create":
        raise UsageError("--if-not-exists works with --create only")
    if args.if_exists and action not in ("--alter", "--describe", "--delete"):
        raise UsageError("--if-exists works with --alter, --describe and --delete only")
    if (args.replication_factor is not None or args.replica_assignment) and action != "--create":
        raise UsageError("--replication-factor and --replica-assignment work with --create only")
    if args.partitions is not None and action not in ("--create", "--alter"):
        raise UsageError("--partitions works with --create and --alter only")
    if args.replica_assignment and (args.partitions is not None or args.replication_factor is not None):
        raise UsageError("--replica-assignment replaces --partitions and --replication-factor; give one or the other")
    if args.partitions is not None and args.partitions < 1:
        raise UsageError(f"--partitions must be at least 1, got {args.partitions}")
    if args.replication_factor is not None and args.replication_factor < 1:
        raise UsageError(f"--replication-factor must be at least 1, got {args.replication_factor}")


def _replica_assignment(text: str) -> list[list[int]]:
    try:
        return [[int(broker) for broker in partition.split(":")] for partition in text.split(",")]
    except ValueError:
        raise UsageError(f"--replica-assignment {text!r}: expected broker ids like 1:2,2:3") from None


def create(admin: AdminClient, args: argparse.Namespace) -> int:
    assignment = _replica_assignment(args.replica_assignment) if args.replica_assignment else None
    topic = NewTopic(args.topic, num_partitions=args.partitions or -1,
                     replication_factor=args.replication_factor or -1,
                     replica_assignment=assignment, config=properties_from(args.config))
    result = admin.create_topics([topic])[args.topic]
    if isinstance(result, KafkaException):
        if result.code == ErrorCode.TOPIC_ALREADY_EXISTS and args.if_not_exists:
            return 0
        raise ToolError(f"cannot create topic '{args.topic}': {explain(result, args)}")
    print(f"Created topic {args.topic}.")
    return 0


def _matching(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    """Topic names chosen by --topic (a regex) and --exclude-internal, sorted."""
    listings = admin.list_topics(internal=not args.exclude_internal)
    names = sorted(listings)
    if args.topic is not None:
        matches = topic_matcher(args.topic)
        names = [name for name in names if matches(name)]
    return names


def _existing(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    """The topics --topic names; none is an error unless --if-exists, as Kafka's ensureTopicExists."""
    names = _matching(admin, args)
    if not names and args.topic is not None and not args.if_exists:
        raise ToolError(f"Topic '{args.topic}' does not exist as expected (see 'gregor topics --list')")
    return names


def list_topics(admin: AdminClient, args: argparse.Namespace) -> int:
    for name in _matching(admin, args):
        print(name)
    return 0


def alter(admin: AdminClient, args: argparse.Namespace) -> int:
    names = _existing(admin, args)
    if not names:
        return 0
    results = admin.create_partitions({name: args.partitions for name in names})
    failures = [f"'{name}': {error}" for name, error in results.items() if error is not None]
    if failures:
        raise ToolError("cannot change the partitions of " + "; ".join(failures))
    return 0


def delete(admin: AdminClient, args: argparse.Namespace) -> int:
    names = _existing(admin, args)
    internal = [name for name, listing in admin.list_topics(internal=True).items()
                if listing.is_internal and name in names]
    if internal:
        raise ToolError(f"Topic {internal[0]} is an internal topic and may not be deleted")
    if not names:
        return 0
    results = admin.delete_topics(names)
    failures = [f"'{name}': {error}" for name, error in results.items()
                if error is not None and not (args.if_exists and error.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    if failures:
        raise ToolError("cannot delete topic " + "; ".join(failures))
    return 0


def describe(admin: AdminClient, args: argparse.Namespace) -> int:
    names = _existing(admin, args)
    if not names:
        return 0
    descriptions = admin.describe_topics(names)
    resources = {name: ConfigResource(ResourceType.TOPIC, name) for name in names}
    configs = admin.describe_configs(resources.values())
    partition_filter = _partition_filter(args)
    for name in names:
        description = descriptions[name]
        if isinstance(description, KafkaException):
            if args.if_exists and description.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                continue
            raise ToolError(f"cannot describe topic '{name}': {explain(description, args)}")
        entries = configs.get(resources[name])
        overrides = [] if isinstance(entries, KafkaException) or entries is None else [
            f"{entry.name}={entry.value}" for entry in entries.values()
            if not entry.is_default and entry.source != ConfigSource.DEFAULT_CONFIG]
        if args.topics_with_overrides:
            if overrides:
                print(_topic_line(description, overrides))
            continue
        if partition_filter is None:
            print(_topic_line(description, overrides))
        for partition in description.partitions:
            if partition_filter is None or partition_filter(partition):
                print(_partition_line(partition))
    return 0


def _partition_filter(args: argparse.Namespace) -> Callable[[PartitionMetadata], bool] | None:
    if args.under_replicated_partitions and args.unavailable_partitions:
        return lambda p: len(p.isr) < len(p.replicas) or p.leader < 0
    if args.under_replicated_partitions:
        return lambda p: len(p.isr) < len(p.replicas)
    if args.unavailable_partitions:
        return lambda p: p.leader < 0
    return None


def _topic_line(description: TopicDescription, overrides: list[str]) -> str:
    replication = len(description.partitions[0].replicas) if description.partitions else 0
    topic_id = description.topic_id if description.topic_id is not None else "none"
    return (f"Topic: {description.name}\tTopicId: {topic_id}\tPartitionCount: {len(description.partitions)}\t"
            f"ReplicationFactor: {replication}\tConfigs: {','.join(overrides)}")


def _partition_line(partition: PartitionMetadata) -> str:
    leader = str(partition.leader) if partition.leader >= 0 else "none"
    line = (f"\tTopic: {partition.topic}\tPartition: {partition.partition}\tLeader: {leader}\t"
            f"Replicas: {_ids(partition.replicas)}\tIsr: {_ids(partition.isr)}")
    if partition.offline_replicas:
        line += f"\tOffline: {_ids(partition.offline_replicas)}"
    return line


def _ids(ids: tuple[int, ...]) -> str:
    return ",".join(str(node) for node in ids)
