"""`gregor leader-election`: elect preferred or unclean partition leaders, as kafka-leader-election.sh.

After a broker comes back, its partitions stay led by the replicas that took over; a PREFERRED
election gives leadership back to the first replica of each partition (UNCLEAN elects any live
replica of a partition that has no leader, at the risk of losing records).
"""

from __future__ import annotations

import argparse
from typing import Any

from gregor.cli.common import (
    EXIT_OK, ToolError, UsageError, add_connection_options, add_tool, guarded, open_admin,
    partition_name, read_json_file,
)
from gregor.client import KafkaException, TopicPartition
from gregor.client.admin import ElectionType
from gregor.protocol.error_codes import ErrorCode

EPILOG = """examples:
  gregor leader-election --bootstrap-server localhost:9092 --election-type PREFERRED --all-topic-partitions
  gregor leader-election --bootstrap-server localhost:9092 --election-type PREFERRED --topic orders --partition 0
  gregor leader-election --bootstrap-server localhost:9092 --election-type UNCLEAN --path-to-json-file elect.json

--path-to-json-file names partitions as Kafka's file does:
  {"partitions": [{"topic": "orders", "partition": 0}, {"topic": "orders", "partition": 1}]}
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "leader-election", "elect preferred or unclean partition leaders",
                      "Elect the preferred (or an unclean) leader of partitions (kafka-leader-election.sh).", EPILOG)
    add_connection_options(parser, config_flags=("--admin.config", "--command-config"))
    parser.add_argument("--election-type", metavar="PREFERRED|UNCLEAN", type=_election_type,
                        help="PREFERRED: the first replica of each partition; UNCLEAN: any live replica of a "
                             "partition without a leader (required)")
    parser.add_argument("--topic", metavar="TOPIC", help="the topic of the partition to elect (with --partition)")
    parser.add_argument("--partition", type=int, metavar="N", help="the partition of --topic")
    parser.add_argument("--all-topic-partitions", action="store_true", help="every partition of every topic")
    parser.add_argument("--path-to-json-file", metavar="FILE", help="a JSON file listing the partitions")
    parser.set_defaults(run=run)


def _election_type(text: str) -> ElectionType:
    try:
        return ElectionType[text.upper()]
    except KeyError:
        raise argparse.ArgumentTypeError(f"expected PREFERRED or UNCLEAN, got {text!r}") from None


@guarded("leader-election")
def run(args: argparse.Namespace) -> int:
    partitions = _partitions(args)
    admin = open_admin(args)
    try:
        results = admin.elect_leaders(args.election_type, partitions)
    finally:
        admin.close()
    return _report(args.election_type, results)


def _partitions(args: argparse.Namespace) -> list[TopicPartition] | None:
    """Kafka's option rules: --election-type, and exactly one of the three ways to name partitions."""
    if args.election_type is None:
        raise UsageError("Missing required option(s): --election-type")
    chosen = [flag for flag, given in (("--all-topic-partitions", args.all_topic_partitions),
                                       ("--topic", args.topic is not None),
                                       ("--path-to-json-file", args.path_to_json_file is not None)) if given]
    if len(chosen) != 1:
        raise UsageError("One and only one of the following options is required: "
                         "--all-topic-partitions, --topic, --path-to-json-file")
    if args.partition is not None and args.topic is None:
        raise UsageError("--partition is only allowed with --topic")
    if args.topic is not None:
        if args.partition is None:
            raise UsageError("Missing required option(s): --partition (with --topic)")
        return [TopicPartition(args.topic, args.partition)]
    if args.path_to_json_file is not None:
        return parse_election_file(read_json_file(args.path_to_json_file, "--path-to-json-file"),
                                   args.path_to_json_file)
    return None


def parse_election_file(document: Any, path: str) -> list[TopicPartition]:
    """Kafka's election file: {"partitions": [{"topic": T, "partition": N}, ...]}, no partition twice."""
    entries = document.get("partitions") if isinstance(document, dict) else None
    if not isinstance(entries, list):
        raise ToolError(f"--path-to-json-file {path}: expected {{\"partitions\": [{{\"topic\": ..., "
                        f"\"partition\": ...}}, ...]}}")
    partitions = []
    for entry in entries:
        if not (isinstance(entry, dict) and isinstance(entry.get("topic"), str)
                and isinstance(entry.get("partition"), int)):
            raise ToolError(f"--path-to-json-file {path}: each partition needs a \"topic\" (string) and a "
                            f"\"partition\" (integer), got {entry!r}")
        partitions.append(TopicPartition(entry["topic"], entry["partition"]))
    duplicates = sorted({partition_name(*tp) for tp in partitions if partitions.count(tp) > 1})
    if duplicates:
        raise ToolError(f"Replica election data contains duplicate partitions: {', '.join(duplicates)}")
    return partitions


def _report(election_type: ElectionType, results: dict[TopicPartition, KafkaException | None]) -> int:
    """Kafka's three lines: elected, already elected, failed (each failure on a line of its own)."""
    succeeded, noop, failed = [], [], []
    for tp in sorted(results):
        error = results[tp]
        if error is None:
            succeeded.append(partition_name(*tp))
        elif error.code == ErrorCode.ELECTION_NOT_NEEDED:
            noop.append(partition_name(*tp))
        else:
            failed.append((partition_name(*tp), error))
    if succeeded:
        print(f"Successfully completed leader election ({election_type.name}) for partitions {', '.join(succeeded)}")
    if noop:
        print(f"Valid replica already elected for partitions {', '.join(noop)}")
    for name, error in failed:
        print(f"Error completing leader election ({election_type.name}) for partition: {name}: {error}")
    if failed:
        raise ToolError(f"{len(failed)} replica(s) could not be elected")
    return EXIT_OK
