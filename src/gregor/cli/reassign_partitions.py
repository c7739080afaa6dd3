"""`gregor reassign-partitions`: move partition replicas between brokers, as kafka-reassign-partitions.sh.

--generate proposes a placement of topics over a broker list (Kafka's replica assignment, the
same the controller uses for new topics); --execute starts the moves in a reassignment file;
--verify tells per partition whether its move is done; --cancel stops running moves (the
replicas go back to where they were); --list shows every running move. The moves themselves run
on the cluster: new replicas copy the log from the leader and join the ISR, then the old ones
are dropped.
"""

from __future__ import annotations

import argparse
import json
import random
from typing import Any, Callable, Mapping, Sequence

from gregor.cli.common import (
    ToolError, UsageError, add_connection_options, add_tool, explain, guarded, one_action, open_admin,
    partition_name, read_json_file, require,
)
from gregor.client import AdminClient, KafkaException, TopicPartition
from gregor.controller.placement import place_replicas

ACTIONS = ("--generate", "--execute", "--verify", "--cancel", "--list")
ANY_LOG_DIR = "any"

EPILOG = """examples:
  gregor reassign-partitions --bootstrap-server localhost:9092 --generate \\
      --topics-to-move-json-file topics.json --broker-list 1,2,3
  gregor reassign-partitions --bootstrap-server localhost:9092 --execute --reassignment-json-file plan.json
  gregor reassign-partitions --bootstrap-server localhost:9092 --verify --reassignment-json-file plan.json
  gregor reassign-partitions --bootstrap-server localhost:9092 --cancel --reassignment-json-file plan.json
  gregor reassign-partitions --bootstrap-server localhost:9092 --list

topics.json: {"topics": [{"topic": "orders"}], "version": 1}
plan.json:   {"version": 1, "partitions": [{"topic": "orders", "partition": 0, "replicas": [2, 3],
              "log_dirs": ["any", "any"]}]}
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "reassign-partitions", "move partition replicas between brokers",
                      "Move partition replicas between brokers (kafka-reassign-partitions.sh).", EPILOG)
    add_connection_options(parser)
    actions = parser.add_argument_group("actions (exactly one)")
    actions.add_argument("--generate", action="store_true", help="propose a placement of topics over brokers")
    actions.add_argument("--execute", action="store_true", help="start the moves of a reassignment file")
    actions.add_argument("--verify", action="store_true", help="whether each move of a reassignment file is done")
    actions.add_argument("--cancel", action="store_true", help="stop the running moves of a reassignment file")
    actions.add_argument("--list", action="store_true", help="every running move")
    parser.add_argument("--topics-to-move-json-file", metavar="FILE", help="with --generate: the topics to move")
    parser.add_argument("--broker-list", metavar="ID[,ID...]", help="with --generate: the brokers to move to")
    parser.add_argument("--reassignment-json-file", metavar="FILE",
                        help="with --execute, --verify, --cancel: the reassignment (Kafka's JSON format)")
    parser.add_argument("--additional", action="store_true",
                        help="with --execute: start even though other moves are running")
    parser.add_argument("--disable-rack-aware", action="store_true",
                        help="with --generate: ignore the brokers' racks")
    parser.set_defaults(run=run)


@guarded("reassign-partitions")
def run(args: argparse.Namespace) -> int:
    action = one_action(args, ACTIONS)
    if action == "--generate":
        require(args, "--topics-to-move-json-file", "--broker-list", action=action)
    elif action != "--list":
        require(args, "--reassignment-json-file", action=action)
    if args.additional and action != "--execute":
        raise UsageError("--additional works with --execute only")
    if args.disable_rack_aware and action != "--generate":
        raise UsageError("--disable-rack-aware works with --generate only")
    handlers: dict[str, Callable[[AdminClient, argparse.Namespace], int]] = {
        "--generate": generate, "--execute": execute, "--verify": verify, "--cancel": cancel, "--list": list_moves}
    plan = None if action in ("--generate", "--list") else _read_plan(args.reassignment_json_file)
    args.plan = plan
    admin = open_admin(args)
    try:
        return handlers[action](admin, args)
    finally:
        admin.close()


# ---- the files ----

def reassignment_json(assignment: Mapping[TopicPartition, Sequence[int]]) -> str:
    """Kafka's reassignment document, compact as Kafka writes it, partitions in order."""
    return json.dumps({"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas),
         "log_dirs": [ANY_LOG_DIR] * len(replicas)}
        for tp, replicas in sorted(assignment.items())]}, separators=(",", ":"))


def _read_plan(path: str) -> dict[TopicPartition, list[int]]:
    return parse_reassignment(read_json_file(path, "--reassignment-json-file"), path)


def parse_reassignment(document: Any, path: str) -> dict[TopicPartition, list[int]]:
    """Kafka's reassignment file (version 1): each partition's target replicas; log dirs must be "any"."""
    def bad(detail: str) -> ToolError:
        return ToolError(f"--reassignment-json-file {path}: {detail}")

    if not isinstance(document, dict) or not isinstance(document.get("partitions"), list):
        raise bad('expected {"version": 1, "partitions": [{"topic": ..., "partition": ..., "replicas": [...]}]}')
    if document.get("version", 1) != 1:
        raise bad(f"Not supported version field value {document['version']}")
    plan: dict[TopicPartition, list[int]] = {}
    for entry in document["partitions"]:
        if not (isinstance(entry, dict) and isinstance(entry.get("topic"), str)
                and isinstance(entry.get("partition"), int) and isinstance(entry.get("replicas"), list)
                and all(isinstance(replica, int) for replica in entry["replicas"])):
            raise bad(f'each partition needs "topic" (string), "partition" (integer) and "replicas" '
                      f"(broker ids), got {entry!r}")
        tp, replicas = TopicPartition(entry["topic"], entry["partition"]), entry["replicas"]
        name = partition_name(*tp)
        if tp in plan:
            raise bad(f"Partition reassignment contains duplicate topic partitions: {name}")
        if not replicas:
            raise bad(f"Partition replica list cannot be empty: {name}")
        if len(set(replicas)) != len(replicas):
            raise bad(f"Partition replica lists may not contain duplicate entries: {name} has {replicas}")
        log_dirs = entry.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
        if not isinstance(log_dirs, list) or len(log_dirs) != len(replicas):
            raise bad(f"Size of replicas list {replicas} is different from size of log dirs list {log_dirs} "
                      f"for partition {name}")
        if any(log_dir != ANY_LOG_DIR for log_dir in log_dirs):
            raise bad(f'moving replicas to given log dirs is not supported (partition {name}): use "any"')
        plan[tp] = replicas
    if not plan:
        raise bad("Partition reassignment list cannot be empty")
    return plan


def _topics_to_move(path: str) -> list[str]:
    document = read_json_file(path, "--topics-to-move-json-file")
    entries = document.get("topics") if isinstance(document, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) and isinstance(e.get("topic"), str)
                                                for e in entries):
        raise ToolError(f'--topics-to-move-json-file {path}: expected {{"topics": [{{"topic": ...}}], "version": 1}}')
    topics = [entry["topic"] for entry in entries]
    duplicates = sorted({topic for topic in topics if topics.count(topic) > 1})
    if duplicates:
        raise ToolError(f"List of topics to reassign contains duplicate entries: {','.join(duplicates)}")
    if not topics:
        raise ToolError(f"--topics-to-move-json-file {path}: the list of topics is empty")
    return topics


def _broker_list(text: str) -> list[int]:
    try:
        brokers = [int(item) for item in text.split(",")]
    except ValueError:
        raise UsageError(f"--broker-list: expected broker ids like 1,2,3, got {text!r}") from None
    duplicates = sorted({broker for broker in brokers if brokers.count(broker) > 1})
    if duplicates:
        raise UsageError(f"Broker list contains duplicate entries: {','.join(map(str, duplicates))}")
    return brokers


# ---- the cluster ----

def _current(admin: AdminClient, args: argparse.Namespace, topics: Sequence[str]) -> dict[TopicPartition, list[int]]:
    """The replicas of every partition of `topics`; a topic that does not exist is an error."""
    current: dict[TopicPartition, list[int]] = {}
    for name, description in admin.describe_topics(sorted(set(topics))).items():
        if isinstance(description, KafkaException):
            raise ToolError(f"cannot describe topic '{name}': {explain(description, args)}")
        for partition in description.partitions:
            current[TopicPartition(name, partition.partition)] = list(partition.replicas)
    return current


def _current_of_plan(admin: AdminClient, args: argparse.Namespace) -> dict[TopicPartition, list[int]]:
    current = _current(admin, args, [tp.topic for tp in args.plan])
    missing = [partition_name(*tp) for tp in sorted(args.plan) if tp not in current]
    if missing:
        raise ToolError(f"Unable to find partition: {', '.join(missing)}")
    return {tp: current[tp] for tp in args.plan}


def _brokers(admin: AdminClient) -> dict[int, str | None]:
    return {node.node_id: node.rack for node in admin.describe_cluster().nodes}


# ---- the actions ----

def generate(admin: AdminClient, args: argparse.Namespace) -> int:
    topics = _topics_to_move(args.topics_to_move_json_file)
    brokers = _broker_list(args.broker_list)
    racks = _brokers(admin)
    unknown = [broker for broker in brokers if broker not in racks]
    if unknown:
        raise ToolError(f"Unknown broker id(s) in --broker-list: {','.join(map(str, unknown))} "
                        f"(the cluster's brokers: {','.join(map(str, sorted(racks)))})")
    current = _current(admin, args, topics)
    proposed: dict[TopicPartition, list[int]] = {}
    rng = random.Random()
    for topic in topics:
        partitions = sorted(tp.partition for tp in current if tp.topic == topic)
        factor = len(current[TopicPartition(topic, partitions[0])])
        if factor > len(brokers):
            raise ToolError(f"Replication factor: {factor} larger than available brokers: {len(brokers)}.")
        placement = place_replicas(sorted(brokers), range(len(partitions)), factor, rng,
                                   None if args.disable_rack_aware else {broker: racks[broker] for broker in brokers})
        proposed.update({TopicPartition(topic, partition): placement[index]
                         for index, partition in enumerate(partitions)})
    print(f"Current partition replica assignment\n{reassignment_json(current)}\n")
    print(f"Proposed partition reassignment configuration\n{reassignment_json(proposed)}")
    return 0


def execute(admin: AdminClient, args: argparse.Namespace) -> int:
    current = _current_of_plan(admin, args)
    brokers = _brokers(admin)
    unknown = sorted({broker for replicas in args.plan.values() for broker in replicas if broker not in brokers})
    if unknown:
        raise ToolError(f"Unknown broker id(s): {','.join(map(str, unknown))}")
    if not args.additional and admin.list_partition_reassignments():
        raise ToolError("Cannot execute because there is an existing partition assignment. Use --additional to "
                        "override this and create a new partition assignment in addition to the existing one.")
    print(f"Current partition replica assignment\n\n{reassignment_json(current)}\n\n"
          f"Save this to use as the --reassignment-json-file option during rollback")
    results = admin.alter_partition_reassignments(args.plan)
    _refuse_failures("Error reassigning partition(s):", results, args)
    names = ",".join(partition_name(*tp) for tp in sorted(args.plan))
    print(f"Successfully started partition reassignment{'s' if len(args.plan) > 1 else ''} for {names}")
    return 0


def verify(admin: AdminClient, args: argparse.Namespace) -> int:
    # Running moves first: one that ends between the two questions is then seen as completed.
    moving = admin.list_partition_reassignments(list(args.plan))
    current = _current_of_plan(admin, args)
    print("Status of partition reassignment:")
    for tp in sorted(args.plan):
        name, target = partition_name(*tp), args.plan[tp]
        if tp in moving:
            print(f"Reassignment of partition {name} is still in progress.")
        elif current[tp] == target:
            print(f"Reassignment of partition {name} is completed.")
        else:
            print(f"There is no active reassignment of partition {name}, but replica set is "
                  f"{_ids(current[tp])} rather than {_ids(target)}.")
    return 0


def cancel(admin: AdminClient, args: argparse.Namespace) -> int:
    moving = admin.list_partition_reassignments(list(args.plan))
    targets = sorted(tp for tp in args.plan if tp in moving)
    if not targets:
        print("None of the specified partition reassignments are active.")
        return 0
    results = admin.alter_partition_reassignments({tp: None for tp in targets})
    _refuse_failures("Error cancelling partition reassignment(s):", results, args)
    names = ",".join(partition_name(*tp) for tp in targets)
    print(f"Successfully cancelled partition reassignment{'s' if len(targets) > 1 else ''} for: {names}")
    return 0


def list_moves(admin: AdminClient, args: argparse.Namespace) -> int:
    moving = admin.list_partition_reassignments()
    if not moving:
        print("No partition reassignments found.")
        return 0
    print("Current partition reassignments:")
    for tp in sorted(moving):
        move = moving[tp]
        line = f"{partition_name(*tp)}: replicas: {_ids(move.replicas)}."
        if move.adding_replicas:
            line += f" adding: {_ids(move.adding_replicas)}."
        if move.removing_replicas:
            line += f" removing: {_ids(move.removing_replicas)}."
        print(line)
    return 0


def _refuse_failures(what: str, results: Mapping[TopicPartition, KafkaException | None],
                     args: argparse.Namespace) -> None:
    failures = [f"{partition_name(*tp)}: {explain(error, args)}" for tp, error in sorted(results.items())
                if error is not None]
    if failures:
        raise ToolError(f"{what} {'; '.join(failures)}")


def _ids(ids: Sequence[int]) -> str:
    return ",".join(map(str, ids))
