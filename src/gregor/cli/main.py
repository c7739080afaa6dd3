"""`gregor <tool>`: one entry point for the server and the Kafka-style tools."""

from __future__ import annotations

import argparse
import sys

from gregor import __version__
from gregor.cli import (
    acls, cluster, configs, console_consumer, console_producer, consumer_groups, delete_records, dump_log, features,
    get_offsets, leader_election, log_dirs, perf, reassign_partitions, server, share_groups, storage, topics,
    transactions, web_console,
)
from gregor.cli.common import ToolParser


def build_parser() -> argparse.ArgumentParser:
    parser = ToolParser(
        prog="gregor",
        description="Gregor: a Kafka-compatible event streaming platform in Python.",
    )
    parser.add_argument("--version", action="version", version=f"gregor {__version__}")
    tools = parser.add_subparsers(dest="tool", metavar="<tool>")
    server.register(tools)
    topics.register(tools)
    console_producer.register(tools)
    console_consumer.register(tools)
    consumer_groups.register(tools)
    share_groups.register(tools)
    configs.register(tools)
    acls.register(tools)
    dump_log.register(tools)
    get_offsets.register(tools)
    delete_records.register(tools)
    leader_election.register(tools)
    reassign_partitions.register(tools)
    log_dirs.register(tools)
    transactions.register(tools)
    features.register(tools)
    storage.register(tools)
    perf.register(tools)
    cluster.register(tools)
    web_console.register(tools)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.tool is None:
        parser.print_help(sys.stderr)
        return 2
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
