"""`gregor consumer-groups`: list, describe, delete consumer groups and reset their offsets,
as kafka-consumer-groups.sh (same actions, columns and reset scenarios)."""

from __future__ import annotations

import argparse
import re
import sys
from datetime import datetime, timedelta, timezone
from typing import Callable

from gregor.cli.common import (
    ToolError, UsageError, add_connection_options, add_tool, guarded, one_action, open_admin, print_table,
    report_deletions,
)
from gregor.cli.group_offsets import listed_offsets, or_dash, parse_datetime, requested_partitions
from gregor.client import AdminClient, KafkaException, TopicPartition
from gregor.client.admin import ConsumerGroupDescription, OffsetSpec

ACTIONS = ("--list", "--describe", "--delete", "--reset-offsets", "--delete-offsets")
SCENARIOS = ("to_earliest", "to_latest", "to_current", "to_offset", "shift_by", "to_datetime", "by_duration")
OFFSET_COLUMNS = ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                  "CONSUMER-ID", "HOST", "CLIENT-ID")
INACTIVE_STATES = ("Empty", "Dead")

EPILOG = """examples:
  gregor consumer-groups --bootstrap-server localhost:9092 --list --state --type
  gregor consumer-groups --bootstrap-server localhost:9092 --describe --group billing --state --verbose
  gregor consumer-groups --bootstrap-server localhost:9092 --describe --group billing
  gregor consumer-groups --bootstrap-server localhost:9092 --describe --group billing --members --verbose
  gregor consumer-groups --bootstrap-server localhost:9092 --describe --all-groups --state
  gregor consumer-groups --bootstrap-server localhost:9092 --reset-offsets --group billing \\
      --topic invoices --to-datetime 2024-01-31T00:00:00.000 --dry-run
  gregor consumer-groups --bootstrap-server localhost:9092 --reset-offsets --group billing \\
      --topic invoices:0,1 --shift-by -10 --execute
  gregor consumer-groups --bootstrap-server localhost:9092 --delete-offsets --group billing --topic invoices
  gregor consumer-groups --bootstrap-server localhost:9092 --delete --group billing

--reset-offsets needs an inactive group (no running consumer); without --execute it only shows
what it would do. --to-datetime is local time unless it ends in Z or an offset like +02:00;
--by-duration is ISO-8601 (PnDTnHnMnS, e.g. PT30M) back from now.
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "consumer-groups", "list, describe, delete groups and reset their offsets",
                      "List, describe and delete consumer groups, reset and delete their offsets "
                      "(kafka-consumer-groups.sh).", EPILOG)
    add_connection_options(parser)
    actions = parser.add_argument_group("actions (exactly one)")
    actions.add_argument("--list", action="store_true", help="list the groups")
    actions.add_argument("--describe", action="store_true",
                         help="offsets and lag per partition (or --members, --state)")
    actions.add_argument("--delete", action="store_true", help="delete inactive groups")
    actions.add_argument("--reset-offsets", action="store_true", help="move the committed offsets of a group")
    actions.add_argument("--delete-offsets", action="store_true", help="delete committed offsets of topics")
    parser.add_argument("--group", action="append", metavar="GROUP", help="a group (repeatable)")
    parser.add_argument("--all-groups", action="store_true", help="every group")
    parser.add_argument("--topic", action="append", metavar="TOPIC[:P,P]",
                        help="a topic, optionally with partitions, for --reset-offsets/--delete-offsets")
    parser.add_argument("--all-topics", action="store_true", help="with --reset-offsets: every topic "
                                                                   "the group has offsets for")
    parser.add_argument("--members", action="store_true", help="with --describe: the members")
    parser.add_argument("--verbose", action="store_true",
                        help="with --describe: the committed leader epochs (offsets); each member's epoch, "
                             "assignment and target (--members); the group type and epochs (--state)")
    parser.add_argument("--offsets", action="store_true", help="with --describe: offsets and lag (the default)")
    parser.add_argument("--state", nargs="?", const="", default=None, metavar="STATES",
                        help="with --describe: the group's state; with --list: show states, or filter by "
                             "comma-separated states")
    parser.add_argument("--type", nargs="?", const="", default=None, metavar="TYPES",
                        help="with --list: show group types (classic, consumer), or filter by comma-separated "
                             "types")
    scenarios = parser.add_argument_group("reset scenarios (exactly one, with --reset-offsets)")
    scenarios.add_argument("--to-earliest", action="store_true", help="to the earliest offset")
    scenarios.add_argument("--to-latest", action="store_true", help="to the log end")
    scenarios.add_argument("--to-current", action="store_true", help="to the current committed offset")
    scenarios.add_argument("--to-offset", type=int, metavar="OFFSET", help="to this offset")
    scenarios.add_argument("--shift-by", type=int, metavar="N", help="by N (negative: back)")
    scenarios.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                           help="to the first offset at or after this time")
    scenarios.add_argument("--by-duration", metavar="PnDTnHnMnS", help="to the first offset this long ago")
    scenarios.add_argument("--dry-run", action="store_true", help="show the new offsets only (the default)")
    scenarios.add_argument("--execute", action="store_true", help="commit the new offsets")
    scenarios.add_argument("--export", action="store_true", help="print the plan as CSV topic,partition,offset")
    parser.set_defaults(run=run)


@guarded("consumer-groups")
def run(args: argparse.Namespace) -> int:
    action = one_action(args, ACTIONS)
    _check_options(args, action)
    handlers: dict[str, Callable[[AdminClient, argparse.Namespace], int]] = {
        "--list": list_groups, "--describe": describe, "--delete": delete,
        "--reset-offsets": reset_offsets, "--delete-offsets": delete_offsets,
    }
    admin = open_admin(args)
    try:
        return handlers[action](admin, args)
    finally:
        admin.close()


def _check_options(args: argparse.Namespace, action: str) -> None:
    if action != "--list" and not args.group and not args.all_groups:
        raise UsageError(f"{action} needs --group GROUP or --all-groups")
    if args.group and args.all_groups:
        raise UsageError("give --group or --all-groups, not both")
    if action == "--delete-offsets" and (not args.topic or not args.group or len(args.group) != 1):
        raise UsageError("--delete-offsets needs one --group and at least one --topic")
    if action == "--reset-offsets":
        if bool(args.topic) == args.all_topics:
            raise UsageError("--reset-offsets needs --topic TOPIC[:P,P] (repeatable) or --all-topics")
        chosen = [name for name in SCENARIOS if getattr(args, name) not in (None, False)]
        if len(chosen) != 1:
            raise UsageError("--reset-offsets needs exactly one of " +
                             ", ".join("--" + name.replace("_", "-") for name in SCENARIOS))
        if args.dry_run and args.execute:
            raise UsageError("give --dry-run or --execute, not both")
    elif any(getattr(args, name) not in (None, False) for name in SCENARIOS) or args.execute or args.dry_run:
        raise UsageError("reset scenarios, --dry-run and --execute work with --reset-offsets only")
    if args.all_topics and action != "--reset-offsets":
        raise UsageError("--all-topics works with --reset-offsets only")
    if args.topic and action not in ("--reset-offsets", "--delete-offsets"):
        raise UsageError("--topic works with --reset-offsets and --delete-offsets only")
    if sum((args.members, args.offsets, args.state is not None and action == "--describe")) > 1:
        raise UsageError("give at most one of --members, --offsets, --state")
    if (args.members or args.offsets) and action != "--describe":
        raise UsageError("--members and --offsets work with --describe only")
    if args.verbose and action != "--describe":
        raise UsageError("--verbose works with --describe (--offsets, --members or --state) only")
    if args.type is not None and action != "--list":
        raise UsageError("--type works with --list only")


def _group_ids(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    if args.all_groups:
        return sorted(listing.group_id for listing in admin.list_consumer_groups())
    return list(dict.fromkeys(args.group))


def _describe_groups(admin: AdminClient, groups: list[str]) -> dict[str, ConsumerGroupDescription]:
    """Descriptions of existing groups; a group that does not exist is an error, as in Kafka."""
    found: dict[str, ConsumerGroupDescription] = {}
    for group, description in admin.describe_consumer_groups(groups).items():
        if isinstance(description, KafkaException):
            raise ToolError(f"cannot describe group '{group}': {description}")
        if description.state == "Dead":
            raise ToolError(f"Consumer group '{group}' does not exist (see 'gregor consumer-groups --list')")
        found[group] = description
    return found


def list_groups(admin: AdminClient, args: argparse.Namespace) -> int:
    states = [state.strip() for state in args.state.split(",") if state.strip()] if args.state else None
    listings = admin.list_consumer_groups(states=_canonical_states(states) if states else None)
    listings = sorted(listings, key=lambda listing: listing.group_id)
    if args.type:
        types = {group_type.strip().lower() for group_type in args.type.split(",") if group_type.strip()}
        unknown = sorted(types - {"classic", "consumer"})
        if unknown:
            raise UsageError(f"unknown group type {unknown[0]!r}; known: classic, consumer")
        listings = [listing for listing in listings if listing.group_type in types]
    if args.state is None and args.type is None:
        for listing in listings:
            print(listing.group_id)
        return 0
    headers = ("GROUP",) + (("TYPE",) if args.type is not None else ()) + (("STATE",) if args.state is not None else ())
    print_table([(listing.group_id,) + ((listing.group_type,) if args.type is not None else ())
                 + ((listing.state or "Unknown",) if args.state is not None else ()) for listing in listings], headers)
    return 0


def _canonical_states(states: list[str]) -> list[str]:
    """Kafka accepts states in any case; the protocol wants e.g. 'PreparingRebalance'."""
    known = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling")
    by_lower = {state.lower(): state for state in known}
    unknown = [state for state in states if state.lower() not in by_lower]
    if unknown:
        raise UsageError(f"unknown group state {unknown[0]!r}; known: {', '.join(known)}")
    return [by_lower[state.lower()] for state in states]


def describe(admin: AdminClient, args: argparse.Namespace) -> int:
    descriptions = _describe_groups(admin, _group_ids(admin, args))
    for group, description in descriptions.items():
        print()
        if args.state is not None:
            _print_state(description, args.verbose)
        elif args.members:
            _print_members(description, args.verbose)
        else:
            _print_offsets(admin, description, args.verbose)
    return 0


def _print_state(description: ConsumerGroupDescription, verbose: bool) -> None:
    coordinator = description.coordinator
    where = f"{coordinator.host}:{coordinator.port}  ({coordinator.node_id})" if coordinator else "-"
    if not verbose:
        print_table([(description.group_id, where, description.protocol or "", description.state,
                      len(description.members))],
                    ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"))
        return
    print_table([(description.group_id, description.group_type, where, description.protocol or "",
                  description.state, or_dash(description.group_epoch), or_dash(description.assignment_epoch),
                  len(description.members))],
                ("GROUP", "TYPE", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
                 "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"))


def _print_members(description: ConsumerGroupDescription, verbose: bool) -> None:
    """Kafka 4's members table: GROUP-INSTANCE-ID only when a member has one; `verbose` adds each
    member's epoch and assignment and the group's target epoch and the member's target."""
    if not description.members:
        print(f"Consumer group '{description.group_id}' has no active members.")
        return
    with_instance = any(member.group_instance_id for member in description.members)
    headers = ("GROUP", "CONSUMER-ID") + (("GROUP-INSTANCE-ID",) if with_instance else ()) + (
        "HOST", "CLIENT-ID", "#PARTITIONS")
    if verbose:
        headers += ("CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT")
    rows = []
    for member in description.members:
        assignment = member.assignment or []
        row: tuple[object, ...] = (description.group_id, member.member_id)
        if with_instance:
            row += (member.group_instance_id or "",)
        row += (member.client_host, member.client_id, len(assignment))
        if verbose:
            target_epoch = description.assignment_epoch if member.member_epoch is not None else None
            row += (or_dash(member.member_epoch), _assignment_text(assignment), or_dash(target_epoch),
                    _assignment_text(member.target_assignment or []))
        rows.append(row)
    print_table(rows, headers)


def _assignment_text(assignment: list[TopicPartition]) -> str:
    """`topic:0,1;other:2`, as Kafka 4's tool writes an assignment ("-" when empty)."""
    by_topic: dict[str, list[int]] = {}
    for tp in assignment:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return ";".join(f"{topic}:{','.join(map(str, sorted(parts)))}" for topic, parts in sorted(by_topic.items())) or "-"


def _print_offsets(admin: AdminClient, description: ConsumerGroupDescription, verbose: bool) -> None:
    """`verbose` adds LEADER-EPOCH, the leader epoch committed with each offset, as Kafka's tool."""
    group = description.group_id
    committed, epochs = _committed(admin, group)
    owners = {tp: member for member in description.members for tp in (member.assignment or [])}
    partitions = sorted(set(committed) | set(owners))
    ends = listed_offsets(admin, partitions, OffsetSpec.latest())
    if not description.members:
        print(f"Consumer group '{group}' has no active members.")
        print()
    rows = []
    for tp in partitions:
        current = committed.get(tp)
        end = ends.get(tp)
        lag = end - current if current is not None and end is not None else None
        member = owners.get(tp)
        row: tuple[object, ...] = (group, tp.topic, tp.partition)
        if verbose:
            row += (or_dash(epochs.get(tp)),)
        rows.append(row + (or_dash(current), or_dash(end), or_dash(lag),
                           member.member_id if member else "-", member.client_host if member else "-",
                           member.client_id if member else "-"))
    print_table(rows, OFFSET_COLUMNS[:3] + ("LEADER-EPOCH",) + OFFSET_COLUMNS[3:] if verbose else OFFSET_COLUMNS)


def _committed(admin: AdminClient, group: str) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """The group's committed offsets, and the leader epochs committed with them (where known)."""
    result: dict[TopicPartition, int] = {}
    epochs: dict[TopicPartition, int] = {}
    for tp, offset in admin.list_consumer_group_offsets(group).items():
        if isinstance(offset, KafkaException):
            raise ToolError(f"cannot read the offsets of group '{group}' for {tp.topic}-{tp.partition}: {offset}")
        if offset.offset >= 0:
            result[TopicPartition(*tp)] = offset.offset
            if offset.leader_epoch is not None and offset.leader_epoch >= 0:
                epochs[TopicPartition(*tp)] = offset.leader_epoch
    return result, epochs


def delete(admin: AdminClient, args: argparse.Namespace) -> int:
    groups = _group_ids(admin, args)
    return report_deletions("consumer", groups, admin.delete_consumer_groups(groups))


def reset_offsets(admin: AdminClient, args: argparse.Namespace) -> int:
    groups = _group_ids(admin, args)
    descriptions = admin.describe_consumer_groups(groups)
    plans: dict[str, dict[TopicPartition, int]] = {}
    for group in groups:
        description = descriptions[group]
        if isinstance(description, KafkaException):
            raise ToolError(f"cannot describe group '{group}': {description}")
        if description.state not in INACTIVE_STATES:
            raise ToolError(f"Assignments can only be reset if the group '{group}' is inactive, but the current "
                            f"state is {description.state}. Stop its consumers first.")
        committed, _ = _committed(admin, group)
        partitions = sorted(committed) if args.all_topics else requested_partitions(admin, args.topic)
        plans[group] = _plan(admin, args, partitions, committed)
    if args.export:
        print("group,topic,partition,offset" if len(plans) > 1 else "topic,partition,offset")
        for group, plan in plans.items():
            for tp, offset in plan.items():
                print((f"{group}," if len(plans) > 1 else "") + f"{tp.topic},{tp.partition},{offset}")
    else:
        for group, plan in plans.items():
            print()
            print_table([(group, tp.topic, tp.partition, offset) for tp, offset in plan.items()],
                        ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"))
    if not args.execute and not args.dry_run and not args.export:
        print("gregor consumer-groups: nothing was changed: add --execute to commit these offsets "
              "(--dry-run only shows them)", file=sys.stderr)
    if args.execute:
        for group, plan in plans.items():
            results = admin.alter_consumer_group_offsets(group, plan)
            failures = [f"{tp.topic}-{tp.partition}: {error}" for tp, error in results.items() if error is not None]
            if failures:
                raise ToolError(f"cannot commit the new offsets of group '{group}': " + "; ".join(failures))
    return 0


def _plan(admin: AdminClient, args: argparse.Namespace, partitions: list[TopicPartition],
          committed: dict[TopicPartition, int]) -> dict[TopicPartition, int]:
    """The new offset of each partition under the chosen scenario, kept within [earliest, latest]."""
    earliest = listed_offsets(admin, partitions, OffsetSpec.earliest())
    latest = listed_offsets(admin, partitions, OffsetSpec.latest())
    if args.to_datetime is not None or args.by_duration is not None:
        when = parse_datetime(args.to_datetime) if args.to_datetime is not None \
            else datetime.now(timezone.utc) - _parse_duration(args.by_duration)
        found = listed_offsets(admin, partitions, OffsetSpec.for_timestamp(int(when.timestamp() * 1000)))
        targets = {tp: found.get(tp, latest.get(tp, 0)) for tp in partitions}
    elif args.to_earliest:
        targets = {tp: earliest.get(tp, 0) for tp in partitions}
    elif args.to_latest:
        targets = {tp: latest.get(tp, 0) for tp in partitions}
    elif args.to_offset is not None:
        targets = {tp: args.to_offset for tp in partitions}
    elif args.shift_by is not None:
        targets = {tp: committed.get(tp, latest.get(tp, 0)) + args.shift_by for tp in partitions}
    else:
        targets = {tp: committed.get(tp, latest.get(tp, 0)) for tp in partitions}
    return {tp: min(max(offset, earliest.get(tp, 0)), latest.get(tp, offset)) for tp, offset in targets.items()}


def _parse_duration(text: str) -> timedelta:
    """ISO-8601 durations as Java's Duration.parse: PnDTnHnMn.nS."""
    match = re.fullmatch(r"P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?", text.strip().upper())
    if match is None or text.strip().upper() in ("P", "PT"):
        raise UsageError(f"--by-duration {text!r}: expected an ISO-8601 duration such as PT30M or P1DT2H")
    days, hours, minutes, seconds = (float(group) if group else 0.0 for group in match.groups())
    return timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)


def delete_offsets(admin: AdminClient, args: argparse.Namespace) -> int:
    group = args.group[0]
    _describe_groups(admin, [group])
    partitions = requested_partitions(admin, args.topic)
    results = admin.delete_consumer_group_offsets(group, partitions)
    rows = [(tp.topic, tp.partition, "Successful" if error is None else f"Error: {error.name}")
            for tp, error in sorted(results.items())]
    print_table(rows, ("TOPIC", "PARTITION", "STATUS"))
    failed = [tp for tp, error in results.items() if error is not None]
    if failed:
        raise ToolError(f"cannot delete the offsets of {len(failed)} partition(s) of group '{group}' (see STATUS)")
    return 0

