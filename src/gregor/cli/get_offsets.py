"""`gregor get-offsets`: the offsets of partitions at a point in time, as kafka-get-offsets.sh.

For each partition of the matching topics, one line `topic:partition:offset`: the latest offset
(-1, the default), the earliest (-2), the offset of the record with the highest timestamp (-3)
or the first offset whose timestamp is at or after a given time in ms. A partition with no such
offset is left out, as Kafka does. A partition whose offset cannot be read (no leader) is named
on stderr, as Kafka does, but the exit code is then 1 (Kafka's is 0).
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable

from gregor.cli.common import (
    EXIT_FAILURE, EXIT_OK, ToolError, add_connection_options, add_tool, explain, guarded, open_admin, topic_matcher,
)
from gregor.client import AdminClient, KafkaException, TopicPartition
from gregor.client.admin import OffsetSpec

NAMED_TIMES = {"latest": OffsetSpec.LATEST_TIMESTAMP, "earliest": OffsetSpec.EARLIEST_TIMESTAMP,
               "max-timestamp": OffsetSpec.MAX_TIMESTAMP}

EPILOG = """examples:
  gregor get-offsets --bootstrap-server localhost:9092 --topic orders
  gregor get-offsets --bootstrap-server localhost:9092 --topic 'orders|payments' --time -2
  gregor get-offsets --bootstrap-server localhost:9092 --topic orders --partitions 0,1 --time 1700000000000

--time: -1 or latest (default), -2 or earliest, -3 or max-timestamp, or a timestamp in ms.
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "get-offsets", "offsets of partitions at a point in time",
                      "Print the offsets of partitions at a point in time (kafka-get-offsets.sh).", EPILOG)
    add_connection_options(parser)
    parser.add_argument("--topic", metavar="REGEX",
                        help="topics whose whole name matches the regular expression (default: all)")
    parser.add_argument("--partitions", metavar="N[,N...]", type=_partition_list,
                        help="only these partitions (default: all)")
    parser.add_argument("--time", metavar="TIME", type=_time, default=OffsetSpec.LATEST_TIMESTAMP,
                        help="-1/latest (default), -2/earliest, -3/max-timestamp or a timestamp in ms")
    parser.add_argument("--exclude-internal-topics", action="store_true", help="leave internal topics out")
    parser.set_defaults(run=run)


def _partition_list(text: str) -> list[int]:
    try:
        partitions = [int(item) for item in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected partition numbers like 0,1,2, got {text!r}") from None
    if any(partition < 0 for partition in partitions):
        raise argparse.ArgumentTypeError(f"partitions cannot be negative, got {text!r}")
    return partitions


def _time(text: str) -> int:
    if text.lower() in NAMED_TIMES:
        return NAMED_TIMES[text.lower()]
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected -1, -2, -3, latest, earliest, max-timestamp or a timestamp "
                                         f"in ms, got {text!r}") from None
    if value < OffsetSpec.MAX_TIMESTAMP:
        raise argparse.ArgumentTypeError(f"unknown special time {value}: use -1, -2, -3 or a timestamp in ms")
    return value


@guarded("get-offsets")
def run(args: argparse.Namespace) -> int:
    matches = topic_matcher(args.topic) if args.topic is not None else (lambda name: True)
    admin = open_admin(args)
    try:
        partitions = _partitions(admin, args, matches)
        results = admin.list_offsets({tp: OffsetSpec(args.time) for tp in partitions})
    finally:
        admin.close()
    failed = False
    for tp in sorted(results):
        result = results[tp]
        if isinstance(result, KafkaException):
            failed = True
            print(f"gregor get-offsets: error: cannot get the offset of {tp.topic}:{tp.partition}: "
                  f"{explain(result, args)}", file=sys.stderr)
        elif result.offset >= 0:
            print(f"{tp.topic}:{tp.partition}:{result.offset}")
    return EXIT_FAILURE if failed else EXIT_OK


def _partitions(admin: AdminClient, args: argparse.Namespace, matches: Callable[[str], bool]) -> list[TopicPartition]:
    names = [name for name in admin.list_topics(internal=not args.exclude_internal_topics) if matches(name)]
    descriptions = admin.describe_topics(names) if names else {}
    partitions = [TopicPartition(name, partition.partition)
                  for name, description in descriptions.items() if not isinstance(description, KafkaException)
                  for partition in description.partitions
                  if args.partitions is None or partition.partition in args.partitions]
    if not partitions:
        raise ToolError("Could not match any topic-partitions with the specified filters "
                        "(see 'gregor topics --list')")
    return partitions
