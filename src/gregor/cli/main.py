"""`gregor <tool>`: one entry point for the server and the Kafka-style tools."""

from __future__ import annotations

import argparse
import importlib
import sys

from gregor import __version__
from gregor.cli.common import ToolParser

#: Each tool's name on the command line and the module that registers and runs it, in the order
#: `gregor --help` lists them. A run imports only its tool's module: a broker does not load the
#: client, a tool does not load the broker (about half a second of imports each).
TOOLS = {
    "server": "gregor.cli.server",
    "topics": "gregor.cli.topics",
    "console-producer": "gregor.cli.console_producer",
    "console-consumer": "gregor.cli.console_consumer",
    "consumer-groups": "gregor.cli.consumer_groups",
    "share-groups": "gregor.cli.share_groups",
    "configs": "gregor.cli.configs",
    "acls": "gregor.cli.acls",
    "dump-log": "gregor.cli.dump_log",
    "get-offsets": "gregor.cli.get_offsets",
    "delete-records": "gregor.cli.delete_records",
    "leader-election": "gregor.cli.leader_election",
    "reassign-partitions": "gregor.cli.reassign_partitions",
    "log-dirs": "gregor.cli.log_dirs",
    "transactions": "gregor.cli.transactions",
    "features": "gregor.cli.features",
    "storage": "gregor.cli.storage",
    "perf": "gregor.cli.perf",
    "cluster": "gregor.cli.cluster",
    "console": "gregor.cli.web_console",
}


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line; with `only` (a tool's name), that tool alone, for a run of it."""
    parser = ToolParser(
        prog="gregor",
        description="Gregor: a Kafka-compatible event streaming platform in Python.",
    )
    parser.add_argument("--version", action="version", version=f"gregor {__version__}")
    tools = parser.add_subparsers(dest="tool", metavar="<tool>")
    for name, module in TOOLS.items():
        if only is None or name == only:
            importlib.import_module(module).register(tools)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv[0] if argv and argv[0] in TOOLS else None)
    args = parser.parse_args(argv)
    if args.tool is None:
        parser.print_help(sys.stderr)
        return 2
    return args.run(args)


if __name__ == "__main__":
    sys.exit(main())
