"""`gregor log-dirs`: the log dirs of brokers and the replicas in them, as kafka-log-dirs.sh --describe.

Prints Kafka's two progress lines, then one line of JSON: per broker, per log dir, its error
(null, or the name of Kafka's error code where Kafka prints the Java exception's class) and each replica's size in bytes, offset lag and
whether it is a future replica (a replica being moved between dirs).
"""

from __future__ import annotations

import argparse
import json

from gregor.cli.common import (
    ToolError, UsageError, add_connection_options, add_tool, guarded, open_admin, partition_name,
)
from gregor.client import KafkaException
from gregor.client.admin import LogDirDescription
from gregor.protocol.error_codes import ErrorCode

EPILOG = """examples:
  gregor log-dirs --bootstrap-server localhost:9092 --describe
  gregor log-dirs --bootstrap-server localhost:9092 --describe --broker-list 1,2 --topic-list orders,payments
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "log-dirs", "log dirs of brokers and the replicas in them",
                      "Describe the log dirs of brokers and the replicas in them (kafka-log-dirs.sh).", EPILOG)
    add_connection_options(parser)
    parser.add_argument("--describe", action="store_true", help="describe the log dirs (required)")
    parser.add_argument("--broker-list", metavar="ID[,ID...]", type=_ids,
                        help="the brokers to query (default: every broker)")
    parser.add_argument("--topic-list", metavar="TOPIC[,TOPIC...]",
                        help="only replicas of these topics (default: all)")
    parser.set_defaults(run=run)


def _ids(text: str) -> list[int]:
    try:
        return [int(item) for item in text.split(",") if item.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected broker ids like 1,2,3, got {text!r}") from None


@guarded("log-dirs")
def run(args: argparse.Namespace) -> int:
    if not args.describe:
        raise UsageError("--describe is the only action and must be given")
    topics = {name.strip() for name in args.topic_list.split(",") if name.strip()} if args.topic_list else set()
    admin = open_admin(args)
    try:
        brokers = [node.node_id for node in admin.describe_cluster().nodes]
        wanted = args.broker_list if args.broker_list is not None else brokers
        missing = [broker for broker in wanted if broker not in brokers]
        if missing:
            raise ToolError(f"The given brokers do not exist from --broker-list: {','.join(map(str, missing))}. "
                            f"Current existent brokers: {','.join(map(str, brokers))}")
        print("Querying brokers for log directories information", flush=True)
        described = admin.describe_log_dirs(wanted)
    finally:
        admin.close()
    failures = [f"broker {broker}: {result}" for broker, result in described.items()
                if isinstance(result, KafkaException)]
    if failures:
        raise ToolError("cannot describe log dirs of " + "; ".join(failures))
    print(f"Received log directory information from brokers {','.join(map(str, wanted))}")
    print(json.dumps(as_json({broker: dirs for broker, dirs in described.items()
                              if not isinstance(dirs, KafkaException)}, topics), separators=(",", ":")))
    return 0


def as_json(described: dict[int, dict[str, LogDirDescription]], topics: set[str]) -> dict:
    """Kafka's document: version 1, brokers → logDirs → partitions (of `topics`, or all if empty)."""
    return {"version": 1, "brokers": [
        {"broker": broker, "logDirs": [
            {"logDir": path,
             "error": None if description.error is None else _error_name(description.error),
             "partitions": [
                 {"partition": partition_name(*tp), "size": info.size, "offsetLag": info.offset_lag,
                  "isFuture": info.is_future}
                 for tp, info in sorted(description.replica_infos.items()) if not topics or tp.topic in topics]}
            for path, description in dirs.items()]}
        for broker, dirs in described.items()]}


def _error_name(error: KafkaException) -> str:
    try:
        return ErrorCode(error.code).name
    except ValueError:
        return str(error.code)
