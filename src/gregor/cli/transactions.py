"""`gregor transactions`: list and describe the transactions of a cluster, as
kafka-transactions.sh's `list` and `describe` (same columns)."""

from __future__ import annotations

import argparse
import time

from gregor.cli.common import (
    ToolError, UsageError, add_connection_options, add_tool, guarded, one_action, open_admin, print_table,
)
from gregor.client import KafkaException

ACTIONS = ("--list", "--describe")
LIST_COLUMNS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_COLUMNS = ("CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
                    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs",
                    "TopicPartitions")

EPILOG = """examples:
  gregor transactions --bootstrap-server localhost:9092 --list
  gregor transactions --bootstrap-server localhost:9092 --list --state Ongoing --duration-filter 60000
  gregor transactions --bootstrap-server localhost:9092 --describe --transactional-id copier-1
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "transactions", "list and describe transactions",
                      "List the transactions every broker coordinates, or describe one transactional id "
                      "(kafka-transactions.sh list / describe).", EPILOG)
    add_connection_options(parser)
    actions = parser.add_argument_group("actions (exactly one)")
    actions.add_argument("--list", action="store_true", help="every transaction, from every broker")
    actions.add_argument("--describe", action="store_true", help="one transactional id, from its coordinator")
    parser.add_argument("--transactional-id", metavar="ID", help="with --describe: the transactional id")
    parser.add_argument("--state", action="append", metavar="STATE",
                        help="with --list: only transactions in this state (e.g. Ongoing; repeatable)")
    parser.add_argument("--producer-id", action="append", type=int, metavar="ID",
                        help="with --list: only this producer id (repeatable)")
    parser.add_argument("--duration-filter", type=int, metavar="MS",
                        help="with --list: only transactions running at least this long")
    parser.set_defaults(run=run)


@guarded("transactions")
def run(args: argparse.Namespace) -> int:
    action = one_action(args, ACTIONS)
    if action == "--describe" and not args.transactional_id:
        raise UsageError("--describe needs --transactional-id ID")
    if action == "--list" and args.transactional_id:
        raise UsageError("--transactional-id works with --describe only")
    if action == "--describe" and (args.state or args.producer_id or args.duration_filter is not None):
        raise UsageError("--state, --producer-id and --duration-filter work with --list only")
    if args.duration_filter is not None and args.duration_filter < 0:
        raise UsageError("--duration-filter must be at least 0")
    admin = open_admin(args)
    try:
        if action == "--list":
            listings = admin.list_transactions(args.state or (), args.producer_id or (),
                                               -1 if args.duration_filter is None else args.duration_filter)
            print_table([(t.transactional_id, t.coordinator_id, t.producer_id, t.state) for t in listings],
                        LIST_COLUMNS)
            return 0
        found = admin.describe_transactions([args.transactional_id])[args.transactional_id]
    finally:
        admin.close()
    if isinstance(found, KafkaException):
        raise ToolError(f"describing transactional id {args.transactional_id} failed: {found}")
    start = found.transaction_start_time_ms
    duration = "None" if start is None else max(0, int(time.time() * 1000) - start)
    partitions = ",".join(f"{tp.topic}-{tp.partition}" for tp in found.topic_partitions)
    print_table([(found.coordinator_id, args.transactional_id, found.producer_id, found.producer_epoch, found.state,
                  found.transaction_timeout_ms, "None" if start is None else start, duration, partitions)],
                DESCRIBE_COLUMNS)
    return 0
