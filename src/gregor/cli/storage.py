"""`gregor storage`: kafka-storage.sh's `format`, `info` and `random-uuid`.

`format -t ID -c server.properties` writes meta.properties into every log directory of the node
and bootstrap.checkpoint (metadata.version from `--release-version`, `--feature name=level`,
`--add-scram` credentials) into its metadata log directory; the node's controller bootstraps a new
cluster from it. Without a format, `gregor server` writes meta.properties on its first start and
the controller bootstraps this build's defaults (the quickstart needs no format). `--standalone`
(Kafka 4's quickstart) formats the node as the one voter of its quorum, which is what a
broker,controller node bootstrapping from its own controller listener runs; `--initial-controllers`
and `--no-initial-controllers` (dynamic quorums, KIP-853) are refused.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import os
import random
import time

from gregor.broker.config import BrokerConfig, ConfigError, load_config
from gregor.broker.meta_properties import META_PROPERTIES
from gregor.broker.quorum_bootstrap import DYNAMIC_QUORUM_REFUSAL
from gregor.broker.storage_format import directories, format_storage, is_formatted, read_bootstrap
from gregor.cli.common import ToolError, add_tool, guarded
from gregor.cli.features import parse_name_and_level
from gregor.cli.scram_argument import ScramArgumentError, parse_scram
from gregor.controller.bootstrap_metadata import BootstrapError, bootstrap_records
from gregor.controller.quorum_controller import generate_cluster_id
from gregor.metadata import feature_versions
from gregor.metadata.features import METADATA_VERSION
from gregor.protocol.messages import FeatureLevelRecord

EPILOG = """examples:
  gregor storage random-uuid
  gregor storage format -t $(gregor storage random-uuid) -c server.properties
  gregor storage format --standalone -t ID -c server.properties   # Kafka 4's quickstart
  gregor storage format -t ID -c server.properties --release-version 3.9-IV0 --feature transaction.version=2 \\
      --add-scram 'SCRAM-SHA-256=[name=alice,password=alice-secret]'
  gregor storage info -c server.properties
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "storage", "format a node's log directories",
                      "Format a node's storage with its cluster id and bootstrap metadata, describe it, or make "
                      "a cluster id (kafka-storage.sh).", EPILOG)
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    fmt = commands.add_parser("format", help="format the node's log directories")
    fmt.add_argument("-c", "--config", required=True, metavar="FILE", help="the node's server.properties")
    fmt.add_argument("-t", "--cluster-id", required=True, metavar="ID", help="the cluster id (random-uuid makes one)")
    fmt.add_argument("-r", "--release-version", metavar="VERSION",
                     help=f"the metadata.version to start at (default {feature_versions.METADATA_VERSION_NAMES[-1]})")
    fmt.add_argument("-f", "--feature", action="append", metavar="NAME=LEVEL",
                     help="a feature level to start with (repeatable), e.g. transaction.version=2")
    fmt.add_argument("-S", "--add-scram", action="append", metavar="CREDENTIAL",
                     help="a SCRAM credential, e.g. 'SCRAM-SHA-256=[name=alice,password=alice-secret]'")
    fmt.add_argument("-g", "--ignore-formatted", action="store_true",
                     help="skip the directories formatted already instead of failing")
    quorum = fmt.add_mutually_exclusive_group()
    quorum.add_argument("-s", "--standalone", action="store_true",
                        help="the node is the one voter of its quorum (controller.quorum.bootstrap.servers "
                             "naming its own controller listener, or Gregor's single-node default)")
    quorum.add_argument("-I", "--initial-controllers", metavar="VOTERS",
                        help="not supported: dynamic quorums (KIP-853); name the voters in controller.quorum.voters")
    quorum.add_argument("-N", "--no-initial-controllers", action="store_true",
                        help="not supported: dynamic quorums (KIP-853); name the voters in controller.quorum.voters")
    info = commands.add_parser("info", help="describe the node's log directories")
    info.add_argument("-c", "--config", required=True, metavar="FILE", help="the node's server.properties")
    commands.add_parser("random-uuid", help="print a new cluster id")
    parser.set_defaults(run=run)


@guarded("storage")
def run(args: argparse.Namespace) -> int:
    if args.command == "random-uuid":
        print(generate_cluster_id(random.SystemRandom()))
        return 0
    config = _config(args.config)
    if args.command == "info":
        return _info(config)
    return _format(args, config)


def _config(path: str) -> BrokerConfig:
    if not os.path.exists(path):
        raise ToolError(f"cannot read properties file {path}: No such file or directory")
    try:
        return load_config(path, {})
    except (ConfigError, OSError) as error:
        raise ToolError(f"{path}: {error}") from None


def check_cluster_id(cluster_id: str) -> None:
    """Kafka's Uuid.fromString: 22 characters of url-safe base64 for 16 bytes."""
    try:
        valid = len(base64.urlsafe_b64decode(cluster_id + "==")) == 16 and len(cluster_id) == 22
    except (binascii.Error, ValueError):
        valid = False
    if not valid:
        raise ToolError(f"Cluster ID string {cluster_id} does not appear to be a valid UUID: it must be 22 "
                        "characters of url-safe base64 (16 bytes), as random-uuid prints")


def check_quorum_flags(args: argparse.Namespace, config: BrokerConfig) -> None:
    """kafka-storage's rules for --standalone / --initial-controllers / --no-initial-controllers,
    within what Gregor runs: static voters, or one voter bootstrapping from itself (`--standalone`)."""
    if args.initial_controllers is not None or args.no_initial_controllers:
        flag = "--initial-controllers" if args.initial_controllers is not None else "--no-initial-controllers"
        raise ToolError(f"{flag}: {DYNAMIC_QUORUM_REFUSAL}")
    voters = config.get("controller.quorum.voters")
    if args.standalone:
        if "controller" not in config.process_roles:
            raise ToolError("--standalone: only a controller can be formatted as the one voter of its quorum")
        if voters:
            raise ToolError("You cannot specify controller.quorum.voters and format the node with --standalone. "
                            "If you want the node to be its quorum's one voter, remove controller.quorum.voters "
                            "and set controller.quorum.bootstrap.servers to its controller listener instead.")
    elif not voters and config.get("controller.quorum.bootstrap.servers") and "controller" in config.process_roles:
        raise ToolError("Because controller.quorum.voters is not set on this controller, you must specify "
                        "--standalone (Gregor supports no other dynamic quorum).")


def _format(args: argparse.Namespace, config: BrokerConfig) -> int:
    check_cluster_id(args.cluster_id)
    check_quorum_flags(args, config)
    configured = config.get("cluster.id")
    if configured and configured != args.cluster_id:
        raise ToolError(f"--cluster-id {args.cluster_id} differs from cluster.id={configured} in {args.config}")
    levels: dict[str, int] = {}
    for text in args.feature or ():
        name, level = parse_name_and_level(text)
        if name in levels:
            raise ToolError(f"Feature {name} was specified more than once.")
        levels[name] = level
    metadata_version = levels.pop(METADATA_VERSION, None)
    if metadata_version is not None and args.release_version is not None:
        raise ToolError("Can't specify both --release-version and --feature metadata.version.")
    if args.release_version is not None:
        try:
            metadata_version = feature_versions.metadata_version_level(args.release_version)
        except ValueError as error:
            raise ToolError(str(error)) from None
    if metadata_version is None:
        metadata_version = feature_versions.LATEST_METADATA_VERSION
    try:
        records = bootstrap_records(metadata_version, levels, [parse_scram(text) for text in args.add_scram or ()])
        formatted = format_storage(config, args.cluster_id, records, args.ignore_formatted, int(time.time() * 1000))
    except (BootstrapError, ScramArgumentError, ConfigError) as error:
        raise ToolError(str(error)) from None
    if not formatted:
        print("All of the log directories are already formatted.")
    release = feature_versions.metadata_version_name(metadata_version)
    for directory in formatted:
        kind = "metadata" if directory == config.metadata_log_dir else "data"
        print(f"Formatting {kind} directory {directory} with {METADATA_VERSION} {release}.")
    return 0


def _info(config: BrokerConfig) -> int:
    print("Found log directories:")
    for directory in directories(config):
        print(f"  {directory}")
    problems: list[str] = []
    found: dict[str, str] = {}
    for directory in directories(config):
        if not os.path.isdir(directory):
            problems.append(f"{directory} does not exist.")
        elif not is_formatted(directory):
            problems.append(f"{directory} is not formatted.")
        else:
            with open(os.path.join(directory, META_PROPERTIES), encoding="utf-8") as handle:
                properties = dict(line.strip().partition("=")[::2] for line in handle if "=" in line)
            if found and properties != found:
                problems.append(f"{directory}: its meta.properties differs from the others'")
            found = found or properties
    if found:
        print(f"\nFound metadata: {{{', '.join(f'{k}={v}' for k, v in sorted(found.items()))}}}")
    try:
        levels = [r for r in read_bootstrap(config.metadata_log_dir) if isinstance(r, FeatureLevelRecord)]
    except ConfigError as error:
        problems.append(str(error))
        levels = []
    if levels:
        shown = ", ".join(f"{r.name}={r.feature_level}" for r in levels)
        print(f"\nFound bootstrap metadata: {shown}")
    if problems:
        print("\nFound problem" + ("s" if len(problems) > 1 else "") + ":")
        for problem in problems:
            print(f"  {problem}")
        return 1
    return 0
