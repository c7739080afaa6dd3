"""`gregor share-groups`: list, describe and delete share groups, reset and delete their
offsets, as kafka-share-groups.sh (its actions, views and columns).

A share group's offset on a partition is its share-partition start offset: records before it are
done with. `--describe` (the `--offsets` view) shows it with the lag to the high watermark (Kafka
4.2 has the broker compute the lag, Gregor's tool computes it from ListOffsets);
`--reset-offsets` and `--delete-offsets` need an empty group (no members), as in Kafka.
"""

from __future__ import annotations

import argparse
import sys

from gregor.cli.common import (
    ToolError, UsageError, add_connection_options, add_tool, guarded, one_action, open_admin, print_table,
    report_deletions,
)
from gregor.cli.group_offsets import listed_offsets, or_dash, parse_datetime, requested_partitions
from gregor.client import AdminClient, KafkaException, TopicPartition
from gregor.client.admin import OffsetSpec
from gregor.client.share_groups import ShareGroupDescription
from gregor.protocol.error_codes import ErrorCode

ACTIONS = ("--list", "--describe", "--delete", "--reset-offsets", "--delete-offsets")
SCENARIOS = ("to_earliest", "to_latest", "to_datetime", "to_offset")
VIEWS = ("offsets", "members", "state")
EPILOG = """examples:
  gregor share-groups --bootstrap-server localhost:9092 --list
  gregor share-groups --bootstrap-server localhost:9092 --describe --group workers
  gregor share-groups --bootstrap-server localhost:9092 --describe --group workers --members
  gregor share-groups --bootstrap-server localhost:9092 --describe --all-groups --state
  gregor share-groups --bootstrap-server localhost:9092 --reset-offsets --group workers \\
      --topic jobs --to-earliest --execute
  gregor share-groups --bootstrap-server localhost:9092 --delete-offsets --group workers --topic jobs
  gregor share-groups --bootstrap-server localhost:9092 --delete --group workers

--reset-offsets, --delete-offsets and --delete need an empty group (stop its consumers first);
--reset-offsets without --execute only shows the new offsets. --to-datetime is local time unless
it ends in Z or an offset like +02:00.
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "share-groups", "list, describe, delete share groups and reset their offsets",
                      "List, describe and delete share groups, reset and delete their offsets "
                      "(kafka-share-groups.sh).", EPILOG)
    add_connection_options(parser)
    actions = parser.add_argument_group("actions (exactly one)")
    actions.add_argument("--list", action="store_true", help="list the share groups")
    actions.add_argument("--describe", action="store_true",
                         help="describe groups (the --offsets view unless --members or --state)")
    actions.add_argument("--delete", action="store_true", help="delete empty groups and their state")
    actions.add_argument("--reset-offsets", action="store_true", help="move the start offsets of an empty group")
    actions.add_argument("--delete-offsets", action="store_true",
                         help="forget an empty group's state on topics (it starts at share.auto.offset.reset)")
    parser.add_argument("--group", action="append", metavar="GROUP", help="a group (repeatable)")
    parser.add_argument("--all-groups", action="store_true", help="every share group")
    parser.add_argument("--topic", action="append", metavar="TOPIC[:P,P]",
                        help="a topic, with --reset-offsets optionally with partitions (repeatable)")
    parser.add_argument("--all-topics", action="store_true",
                        help="with --reset-offsets: every partition the group has state on")
    parser.add_argument("--offsets", action="store_true", help="with --describe: start offsets and lag (default)")
    parser.add_argument("--members", action="store_true", help="with --describe: the members and their partitions")
    parser.add_argument("--state", action="store_true", help="with --list: each group's state; with --describe: "
                                                              "the group's coordinator, state and member count")
    parser.add_argument("--verbose", action="store_true", help="with --describe: member epochs and assignor")
    scenarios = parser.add_argument_group("reset scenarios (exactly one, with --reset-offsets)")
    scenarios.add_argument("--to-earliest", action="store_true", help="the log start offset")
    scenarios.add_argument("--to-latest", action="store_true", help="the high watermark")
    scenarios.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                           help="the first offset at or after the time")
    scenarios.add_argument("--to-offset", type=int, metavar="OFFSET", help="this offset (kept within the log)")
    scenarios.add_argument("--dry-run", action="store_true", help="show the new offsets only (the default)")
    scenarios.add_argument("--execute", action="store_true", help="set the new offsets")
    parser.set_defaults(run=run)


@guarded("share-groups")
def run(args: argparse.Namespace) -> int:
    action = one_action(args, ACTIONS)
    _check_options(args, action)
    admin = open_admin(args)
    try:
        return {"--list": list_groups, "--describe": describe, "--delete": delete, "--reset-offsets": reset_offsets,
                "--delete-offsets": delete_offsets}[action](admin, args)
    finally:
        admin.close()


def _check_options(args: argparse.Namespace, action: str) -> None:
    if action != "--list" and not args.group and not args.all_groups:
        raise UsageError(f"{action} needs --group GROUP" + (" or --all-groups" if action != "--delete-offsets"
                                                            else ""))
    if args.group and args.all_groups:
        raise UsageError("give --group or --all-groups, not both")
    if action == "--delete-offsets" and (args.all_groups or len(args.group or []) != 1 or not args.topic):
        raise UsageError("--delete-offsets needs one --group GROUP and --topic TOPIC (repeatable)")
    if action == "--describe":
        if sum(bool(getattr(args, view)) for view in VIEWS) > 1:
            raise UsageError("give one of --offsets, --members, --state")
    elif args.offsets or args.members or args.verbose or (args.state and action != "--list"):
        raise UsageError("--offsets, --members and --verbose work with --describe only; --state with "
                         "--list or --describe")
    if action == "--list" and (args.group or args.all_groups):
        raise UsageError("--group and --all-groups do not work with --list")
    scenarios = [name for name in SCENARIOS if getattr(args, name) not in (None, False)]
    if action == "--reset-offsets":
        if bool(args.topic) == args.all_topics:
            raise UsageError("--reset-offsets needs --topic TOPIC[:P,P] (repeatable) or --all-topics")
        if len(scenarios) != 1:
            raise UsageError("--reset-offsets needs exactly one of --to-earliest, --to-latest, --to-datetime, "
                             "--to-offset")
        if args.dry_run and args.execute:
            raise UsageError("give --dry-run or --execute, not both")
    elif scenarios or args.execute or args.dry_run or args.all_topics:
        raise UsageError("reset scenarios, --all-topics, --dry-run and --execute work with --reset-offsets only")
    if args.topic and action not in ("--reset-offsets", "--delete-offsets"):
        raise UsageError("--topic works with --reset-offsets and --delete-offsets only")


def _group_ids(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    return ([listing.group_id for listing in admin.list_share_groups()] if args.all_groups
            else list(dict.fromkeys(args.group)))


def _described(admin: AdminClient, groups: list[str],
               missing_ok: bool = False) -> dict[str, ShareGroupDescription | None]:
    """Each group's description; a group that does not exist is an error, or None with `missing_ok`."""
    found: dict[str, ShareGroupDescription | None] = {}
    for group, description in admin.describe_share_groups(groups).items():
        if isinstance(description, KafkaException):
            if description.code == ErrorCode.GROUP_ID_NOT_FOUND and missing_ok:
                found[group] = None
                continue
            if description.code == ErrorCode.GROUP_ID_NOT_FOUND:
                raise ToolError(f"Share group '{group}' does not exist (see 'gregor share-groups --list')")
            raise ToolError(f"cannot describe share group '{group}': {description}")
        found[group] = description
    return found


def list_groups(admin: AdminClient, args: argparse.Namespace) -> int:
    listings = admin.list_share_groups()
    if args.state:
        print_table([(listing.group_id, listing.state or "Unknown") for listing in listings], ("GROUP", "STATE"))
    else:
        for listing in listings:
            print(listing.group_id)
    return 0


def describe(admin: AdminClient, args: argparse.Namespace) -> int:
    for description in _described(admin, _group_ids(admin, args)).values():
        assert description is not None
        print()
        if args.state:
            _print_state(description, args.verbose)
        elif args.members:
            _print_members(description, args.verbose)
        else:
            _print_offsets(admin, description)
    return 0


def _start_offsets(admin: AdminClient, group: str,
                   partitions: list[TopicPartition] | None = None) -> dict[TopicPartition, int | None]:
    found: dict[TopicPartition, int | None] = {}
    for tp, offset in admin.list_share_group_offsets(group, partitions).items():
        if isinstance(offset, KafkaException):
            raise ToolError(f"cannot read the offsets of share group '{group}' for {tp.topic}-{tp.partition}: "
                            f"{offset}")
        found[TopicPartition(*tp)] = offset
    return found


def _print_offsets(admin: AdminClient, description: ShareGroupDescription) -> None:
    group = description.group_id
    starts = _start_offsets(admin, group)
    if not description.members:
        print(f"Share group '{group}' has no active members.")
        print()
    partitions = sorted(starts)
    ends = listed_offsets(admin, partitions, OffsetSpec.latest())
    epochs = {TopicPartition(name, p.partition): p.leader_epoch
              for name, topic in admin.describe_topics(sorted({tp.topic for tp in partitions})).items()
              if not isinstance(topic, KafkaException) for p in topic.partitions}
    rows = []
    for tp in partitions:
        start, end = starts[tp], ends.get(tp)
        lag = max(end - start, 0) if start is not None and end is not None else None
        rows.append((group, tp.topic, tp.partition, or_dash(epochs.get(tp)), or_dash(start), or_dash(lag)))
    print_table(rows, ("GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG"))


def delete(admin: AdminClient, args: argparse.Namespace) -> int:
    groups = _group_ids(admin, args)
    return report_deletions("share", groups, admin.delete_share_groups(groups))


def _refuse_active(description: ShareGroupDescription | None) -> None:
    if description is not None and description.members:
        raise ToolError(f"Share group '{description.group_id}' is not empty ({len(description.members)} member(s)): "
                        "stop its consumers first.")


def reset_offsets(admin: AdminClient, args: argparse.Namespace) -> int:
    descriptions = _described(admin, _group_ids(admin, args), missing_ok=True)  # a new group may be given offsets
    plans: dict[str, dict[TopicPartition, int]] = {}
    for group, description in descriptions.items():
        _refuse_active(description)
        partitions = sorted(_start_offsets(admin, group)) if args.all_topics \
            else requested_partitions(admin, args.topic)
        plans[group] = _plan(admin, args, partitions)
    for group, plan in plans.items():
        print()
        print_table([(group, tp.topic, tp.partition, offset) for tp, offset in plan.items()],
                    ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"))
    if not args.execute:
        if not args.dry_run:
            print("gregor share-groups: nothing was changed: add --execute to set these offsets "
                  "(--dry-run only shows them)", file=sys.stderr)
        return 0
    for group, plan in plans.items():
        results = admin.alter_share_group_offsets(group, {(tp.topic, tp.partition): o for tp, o in plan.items()})
        failures = [f"{tp.topic}-{tp.partition}: {error}" for tp, error in results.items() if error is not None]
        if failures:
            raise ToolError(f"cannot set the new offsets of share group '{group}': " + "; ".join(failures))
    return 0


def _plan(admin: AdminClient, args: argparse.Namespace, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
    """The new start offset of each partition under the chosen scenario, within [earliest, latest]."""
    earliest = listed_offsets(admin, partitions, OffsetSpec.earliest())
    latest = listed_offsets(admin, partitions, OffsetSpec.latest())
    if args.to_datetime is not None:
        when = parse_datetime(args.to_datetime)
        found = listed_offsets(admin, partitions, OffsetSpec.for_timestamp(int(when.timestamp() * 1000)))
        targets = {tp: found.get(tp, latest.get(tp, 0)) for tp in partitions}
    elif args.to_earliest:
        targets = {tp: earliest.get(tp, 0) for tp in partitions}
    elif args.to_latest:
        targets = {tp: latest.get(tp, 0) for tp in partitions}
    else:
        targets = {tp: args.to_offset for tp in partitions}
    return {tp: min(max(offset, earliest.get(tp, 0)), latest.get(tp, offset)) for tp, offset in targets.items()}


def delete_offsets(admin: AdminClient, args: argparse.Namespace) -> int:
    group = args.group[0]
    _refuse_active(_described(admin, [group])[group])
    topics = list(dict.fromkeys(args.topic))
    results = admin.delete_share_group_offsets(group, topics)
    print_table([(topic, "Successful" if error is None else f"Error: {error.name}")
                 for topic, error in results.items()], ("TOPIC", "STATUS"))
    failed = [topic for topic, error in results.items() if error is not None]
    if failed:
        raise ToolError(f"cannot delete the offsets of {len(failed)} topic(s) of share group '{group}' (see STATUS)")
    return 0


def _print_state(description: ShareGroupDescription, verbose: bool) -> None:
    coordinator = description.coordinator
    where = f"{coordinator.host}:{coordinator.port} ({coordinator.node_id})" if coordinator else "-"
    headers: tuple[str, ...] = ("GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS")
    row: tuple[object, ...] = (description.group_id, where, description.state, len(description.members))
    if verbose:
        headers = ("GROUP", "COORDINATOR (ID)", "ASSIGNOR", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "STATE", "#MEMBERS")
        row = (description.group_id, where, description.assignor, description.group_epoch,
               description.assignment_epoch, description.state, len(description.members))
    print_table([row], headers)


def _print_members(description: ShareGroupDescription, verbose: bool) -> None:
    if not description.members:
        print(f"Share group '{description.group_id}' has no active members.")
        return
    headers: tuple[str, ...] = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT")
    if verbose:
        headers = headers[:4] + ("MEMBER-EPOCH",) + headers[4:]
    rows = []
    for member in description.members:
        by_topic: dict[str, list[int]] = {}
        for topic, partition in member.assignment:
            by_topic.setdefault(topic, []).append(partition)
        assignment = ",".join(f"{topic}:{','.join(map(str, parts))}" for topic, parts in sorted(by_topic.items()))
        row: tuple[object, ...] = (description.group_id, member.member_id, member.client_host, member.client_id)
        if verbose:
            row += (member.member_epoch,)
        rows.append(row + (len(member.assignment), assignment or "-"))
    print_table(rows, headers)
