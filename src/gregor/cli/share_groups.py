"""`gregor share-groups`: list and describe share groups, as kafka-share-groups.sh (its
`--list`, `--describe --members`, `--describe --state` views and columns).

Kafka's default `--describe` view (each partition's start offset and lag) needs
DescribeShareGroupOffsets, which Gregor does not serve yet: it is refused with one line that
points at `--members` and `--state`.
"""

from __future__ import annotations

import argparse

from gregor.cli.common import (
    ToolError, UsageError, add_connection_options, add_tool, guarded, one_action, open_admin, print_table,
)
from gregor.client import AdminClient, KafkaException
from gregor.client.share_groups import ShareGroupDescription
from gregor.protocol.error_codes import ErrorCode

ACTIONS = ("--list", "--describe")
EPILOG = """examples:
  gregor share-groups --bootstrap-server localhost:9092 --list
  gregor share-groups --bootstrap-server localhost:9092 --describe --group workers --members
  gregor share-groups --bootstrap-server localhost:9092 --describe --all-groups --state
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "share-groups", "list and describe share groups",
                      "List and describe share groups (kafka-share-groups.sh).", EPILOG)
    add_connection_options(parser)
    actions = parser.add_argument_group("actions (exactly one)")
    actions.add_argument("--list", action="store_true", help="list the share groups")
    actions.add_argument("--describe", action="store_true", help="describe groups (with --members or --state)")
    parser.add_argument("--group", action="append", metavar="GROUP", help="a group (repeatable)")
    parser.add_argument("--all-groups", action="store_true", help="every share group")
    parser.add_argument("--members", action="store_true", help="with --describe: the members and their partitions")
    parser.add_argument("--state", action="store_true", help="with --list: each group's state; with --describe: "
                                                              "the group's coordinator, state and member count")
    parser.add_argument("--verbose", action="store_true", help="with --describe: member epochs and assignor")
    parser.set_defaults(run=run)


@guarded("share-groups")
def run(args: argparse.Namespace) -> int:
    action = one_action(args, ACTIONS)
    if action == "--describe":
        if not args.group and not args.all_groups:
            raise UsageError("--describe needs --group GROUP or --all-groups")
        if args.group and args.all_groups:
            raise UsageError("give --group or --all-groups, not both")
        if args.members == args.state:
            raise UsageError("--describe needs one of --members or --state (the offsets view needs "
                             "DescribeShareGroupOffsets, which Gregor does not serve yet)")
    elif args.members or args.group or args.all_groups or args.verbose:
        raise UsageError("--group, --all-groups, --members and --verbose work with --describe only")
    admin = open_admin(args)
    try:
        return list_groups(admin, args) if action == "--list" else describe(admin, args)
    finally:
        admin.close()


def list_groups(admin: AdminClient, args: argparse.Namespace) -> int:
    listings = admin.list_share_groups()
    if args.state:
        print_table([(listing.group_id, listing.state or "Unknown") for listing in listings], ("GROUP", "STATE"))
    else:
        for listing in listings:
            print(listing.group_id)
    return 0


def describe(admin: AdminClient, args: argparse.Namespace) -> int:
    groups = ([listing.group_id for listing in admin.list_share_groups()] if args.all_groups
              else list(dict.fromkeys(args.group)))
    for group, description in admin.describe_share_groups(groups).items():
        if isinstance(description, KafkaException):
            if description.code == ErrorCode.GROUP_ID_NOT_FOUND:
                raise ToolError(f"Share group '{group}' does not exist (see 'gregor share-groups --list')")
            raise ToolError(f"cannot describe share group '{group}': {description}")
        print()
        if args.state:
            _print_state(description, args.verbose)
        else:
            _print_members(description, args.verbose)
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
