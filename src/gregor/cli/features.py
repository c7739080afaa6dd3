"""`gregor features`: describe and change a cluster's finalized feature levels, as
kafka-features.sh (sub-commands describe, upgrade, downgrade, disable, version-mapping,
feature-dependencies; the same output lines).

The last two need no cluster: they print what this build maps a release to and what a level
requires. With `--bootstrap-controller` (KIP-919) the admin client talks to the controllers
instead: `describe` reads a controller's ApiVersions, and changes go to the active controller.
"""

from __future__ import annotations

import argparse

from gregor.cli.common import ToolError, add_connection_options, add_tool, guarded, open_admin
from gregor.client.features import FeatureUpdate, UpgradeType
from gregor.metadata import feature_versions
from gregor.metadata.features import METADATA_VERSION, SUPPORTED_FEATURES

EPILOG = """examples:
  gregor features --bootstrap-server localhost:9092 describe
  gregor features --bootstrap-controller localhost:9093 describe
  gregor features --bootstrap-server localhost:9092 upgrade --feature transaction.version=2
  gregor features --bootstrap-server localhost:9092 upgrade --release-version 3.9-IV0 --dry-run
  gregor features --bootstrap-server localhost:9092 downgrade --feature transaction.version=1
  gregor features --bootstrap-server localhost:9092 disable --feature group.version
  gregor features version-mapping --release-version 3.8
  gregor features feature-dependencies --feature transaction.version=2
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "features", "describe and change feature flags",
                      "Describe the features the cluster supports and finalized, or change their levels "
                      "(kafka-features.sh).", EPILOG)
    add_connection_options(parser, controllers=True)
    commands = parser.add_subparsers(dest="command", metavar="<command>", required=True)
    commands.add_parser("describe", help="the supported and finalized features")
    for name, verb in (("upgrade", "Upgrade"), ("downgrade", "Downgrade")):
        change = commands.add_parser(name, help=f"{verb} one or more feature flags")
        change.add_argument("--feature", action="append", metavar="NAME=LEVEL",
                            help=f"a feature to {name} (repeatable), e.g. transaction.version=2")
        change.add_argument("--release-version", metavar="VERSION",
                            help=f"{name} metadata.version (and the features a release starts with) to this "
                                 "release, e.g. 3.9-IV0")
        if name == "downgrade":
            change.add_argument("--unsafe", action="store_true",
                                help="downgrade even if metadata may be lost (Gregor refuses such downgrades)")
        change.add_argument("--dry-run", action="store_true", help="validate only; change nothing")
    disable = commands.add_parser("disable", help="disable feature flags (downgrade to level 0)")
    disable.add_argument("--feature", action="append", metavar="NAME", help="a feature to disable (repeatable)")
    disable.add_argument("--unsafe", action="store_true", help="disable even if metadata may be lost")
    disable.add_argument("--dry-run", action="store_true", help="validate only; change nothing")
    mapping = commands.add_parser("version-mapping", help="the feature levels a release version stands for")
    mapping.add_argument("--release-version", metavar="VERSION",
                         help=f"default: the latest, {feature_versions.METADATA_VERSION_NAMES[-1]}")
    dependencies = commands.add_parser("feature-dependencies", help="what feature levels require")
    dependencies.add_argument("--feature", action="append", metavar="NAME=LEVEL", required=True,
                              help="a feature level to explain (repeatable)")
    parser.set_defaults(run=run)


def parse_name_and_level(text: str) -> tuple[str, int]:
    """`name=level` as Kafka's tool parses it (its error messages)."""
    name, sep, level = text.partition("=")
    if not sep:
        raise ToolError(f"Can't parse feature=level string {text}: equals sign not found.")
    try:
        value = int(level.strip())
    except ValueError:
        raise ToolError(f"Can't parse feature=level string {text}: unable to parse {level.strip()} as a short.") \
            from None
    if not -32768 <= value <= 32767:
        raise ToolError(f"Can't parse feature=level string {text}: unable to parse {level.strip()} as a short.")
    return name.strip(), value


def _release_level(release: str) -> int:
    try:
        return feature_versions.metadata_version_level(release)
    except ValueError as error:
        raise ToolError(str(error)) from None


def level_to_string(name: str, level: int) -> str:
    return feature_versions.metadata_version_name(level) if name == METADATA_VERSION else str(level)


@guarded("features")
def run(args: argparse.Namespace) -> int:
    if args.command == "version-mapping":
        return _version_mapping(args)
    if args.command == "feature-dependencies":
        return _feature_dependencies(args)
    if args.command == "describe":
        return _describe(args)
    return _update(args)


def _describe(args: argparse.Namespace) -> int:
    with open_admin(args) as admin:
        described = admin.describe_features()
    epoch = "-" if described.finalized_features_epoch is None else described.finalized_features_epoch
    for name, (low, high) in sorted(described.supported_features.items()):
        finalized = described.finalized_features.get(name, 0)
        print(f"Feature: {name}\tSupportedMinVersion: {level_to_string(name, low)}\t"
              f"SupportedMaxVersion: {level_to_string(name, high)}\t"
              f"FinalizedVersionLevel: {level_to_string(name, finalized)}\tEpoch: {epoch}")
    return 0


def _updates(args: argparse.Namespace, upgrade_type: UpgradeType) -> dict[str, FeatureUpdate]:
    updates: dict[str, FeatureUpdate] = {}
    if args.command == "disable":
        for name in args.feature or ():
            if name in updates:
                raise ToolError(f"Feature {name} was specified more than once.")
            updates[name] = FeatureUpdate(0, upgrade_type)
        return updates
    if args.release_version is not None and args.feature:
        raise ToolError("Can not specify both --release-version and --feature.")
    if args.release_version is not None:
        levels = feature_versions.release_levels(_release_level(args.release_version))
        return {name: FeatureUpdate(level, upgrade_type) for name, level in levels.items()}
    for text in args.feature or ():
        name, level = parse_name_and_level(text)
        if name in updates:
            raise ToolError(f"Feature {name} was specified more than once.")
        updates[name] = FeatureUpdate(level, upgrade_type)
    return updates


def _update(args: argparse.Namespace) -> int:
    op = args.command
    if op == "upgrade":
        upgrade_type = UpgradeType.UPGRADE
    else:
        upgrade_type = UpgradeType.UNSAFE_DOWNGRADE if args.unsafe else UpgradeType.SAFE_DOWNGRADE
    updates = _updates(args, upgrade_type)
    if not updates:
        raise ToolError(f"You must specify at least one feature to {op}")
    with open_admin(args) as admin:
        outcomes = admin.update_features(updates, validate_only=args.dry_run)
    failures = 0
    for name in sorted(outcomes):
        error, level = outcomes[name], updates[name].max_version_level
        if error is not None:
            failures += 1
            action = f"disable {name}" if op == "disable" else f"{op} {name} to {level}"
            print(f"{'Can not' if args.dry_run else 'Could not'} {action}. {error.error.message or error.name}")
        else:
            result = "disabled." if op == "disable" else f"{op}d to {level}."
            print(f"{name} {'can be' if args.dry_run else 'was'} {result}")
    if failures:
        raise ToolError(f"{failures} out of {len(updates)} operation(s) failed.")
    return 0


def _version_mapping(args: argparse.Namespace) -> int:
    level = feature_versions.LATEST_METADATA_VERSION if args.release_version is None \
        else _release_level(args.release_version)
    levels = feature_versions.release_levels(level)
    print(f"{METADATA_VERSION}={level} ({feature_versions.metadata_version_name(level)})")
    for feature in SUPPORTED_FEATURES:
        if feature.name != METADATA_VERSION:
            print(f"{feature.name}={levels.get(feature.name, 0)}")
    return 0


def _feature_dependencies(args: argparse.Namespace) -> int:
    for text in args.feature:
        name, level = parse_name_and_level(text)
        known = feature_versions.feature(name)
        if known is None:
            raise ToolError(f"Unknown feature: {name}")
        if feature_versions.supported_range_error(name, level) is not None:
            raise ToolError(f"Feature level {level} is not supported for feature {name}")
        needed = feature_versions.dependencies(name, level)
        if not needed:
            print(f"{name}={level} has no dependencies.")
            continue
        print(f"{name}={level} requires:")
        for other, other_level in needed.items():
            shown = f" ({feature_versions.metadata_version_name(other_level)})" if other == METADATA_VERSION else ""
            print(f"    {other}={other_level}{shown}")
    return 0
