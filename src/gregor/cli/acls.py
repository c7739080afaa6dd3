"""`gregor acls`: add, remove and list ACLs, as kafka-acls.sh.

The flags are kafka-acls.sh's: a resource (--topic, --group, --cluster, --transactional-id,
--delegation-token, with --resource-pattern-type), principals and hosts (--allow-principal,
--deny-principal, --allow-host, --deny-host; hosts default to `*`), operations (--operation,
default All) or the --producer / --consumer conveniences (--idempotent adds IDEMPOTENT_WRITE on
the cluster). --remove without a principal removes every ACL of the resource and asks first
unless --force is given. --list filters by resource and --principal.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from typing import Iterable

from gregor.cli.common import ToolError, UsageError, add_connection_options, add_tool, explain, guarded, one_action, \
    open_admin
from gregor.client import AdminClient, KafkaException
from gregor.client.acls import (
    AclBinding, AclBindingFilter, AclOperation, AclPatternType, AclPermissionType, AclResourceType,
)

CLUSTER_NAME = "kafka-cluster"
OPERATIONS = {op.name.replace("_", "").lower(): op for op in AclOperation
              if op not in (AclOperation.UNKNOWN, AclOperation.ANY)}
PATTERNS = {"literal": AclPatternType.LITERAL, "prefixed": AclPatternType.PREFIXED, "any": AclPatternType.ANY,
            "match": AclPatternType.MATCH}

EPILOG = """examples:
  gregor acls --bootstrap-server localhost:9092 --add --allow-principal User:alice --operation Read \\
      --topic orders
  gregor acls --bootstrap-server localhost:9092 --add --allow-principal User:alice --producer \\
      --topic orders- --resource-pattern-type prefixed
  gregor acls --bootstrap-server localhost:9092 --add --allow-principal User:bob --consumer \\
      --topic orders --group billing
  gregor acls --bootstrap-server localhost:9092 --add --deny-principal User:mallory --operation All --topic '*'
  gregor acls --bootstrap-server localhost:9092 --list --topic orders
  gregor acls --bootstrap-server localhost:9092 --remove --allow-principal User:alice --operation Read \\
      --topic orders --force
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "acls", "add, remove and list ACLs",
                      "Manage the cluster's ACLs (kafka-acls.sh).", EPILOG)
    add_connection_options(parser)
    actions = parser.add_argument_group("actions (exactly one)")
    actions.add_argument("--add", action="store_true", help="add ACLs")
    actions.add_argument("--remove", action="store_true", help="remove ACLs")
    actions.add_argument("--list", action="store_true", help="list ACLs")
    resources = parser.add_argument_group("resources")
    resources.add_argument("--topic", action="append", default=[], metavar="TOPIC", help="a topic ('*': all)")
    resources.add_argument("--group", action="append", default=[], metavar="GROUP", help="a consumer group")
    resources.add_argument("--cluster", action="store_true", help="the cluster")
    resources.add_argument("--transactional-id", action="append", default=[], metavar="ID",
                           help="a transactional id")
    resources.add_argument("--delegation-token", action="append", default=[], metavar="ID",
                           help="a delegation token")
    resources.add_argument("--resource-pattern-type", default="literal", metavar="TYPE",
                           help="literal (default), prefixed; with --list and --remove also any or match")
    who = parser.add_argument_group("principals, hosts and operations")
    who.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL",
                     help="a principal to allow, e.g. User:alice")
    who.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL",
                     help="a principal to deny")
    who.add_argument("--allow-host", action="append", default=[], metavar="HOST", help="allowed hosts (default *)")
    who.add_argument("--deny-host", action="append", default=[], metavar="HOST", help="denied hosts (default *)")
    who.add_argument("--principal", action="append", default=[], metavar="PRINCIPAL",
                     help="with --list: only the ACLs of these principals")
    who.add_argument("--operation", action="append", default=[], metavar="OP",
                     help=f"one of {', '.join(op.name.title().replace('_', '') for op in OPERATIONS.values())}")
    who.add_argument("--producer", action="store_true", help="the ACLs a producer needs (Write, Describe, Create)")
    who.add_argument("--consumer", action="store_true", help="the ACLs a consumer needs (Read, Describe; group Read)")
    who.add_argument("--idempotent", action="store_true", help="with --producer: IdempotentWrite on the cluster")
    parser.add_argument("--force", action="store_true", help="remove without asking")
    parser.set_defaults(run=run)


def _patterns(args: argparse.Namespace, pattern: AclPatternType) -> list[tuple[AclResourceType, str]]:
    found = [(AclResourceType.TOPIC, t) for t in args.topic]
    found += [(AclResourceType.GROUP, g) for g in args.group]
    found += [(AclResourceType.TRANSACTIONAL_ID, t) for t in args.transactional_id]
    found += [(AclResourceType.DELEGATION_TOKEN, t) for t in args.delegation_token]
    if args.cluster:
        found.append((AclResourceType.CLUSTER, CLUSTER_NAME))
    if pattern == AclPatternType.PREFIXED and args.cluster:
        raise UsageError("a prefixed pattern cannot name the cluster")
    return found


def _operation(text: str) -> AclOperation:
    found = OPERATIONS.get(text.replace("_", "").replace("-", "").lower())
    if found is None:
        raise UsageError(f"unknown operation {text!r}; one of "
                         f"{', '.join(op.name.title().replace('_', '') for op in OPERATIONS.values())}")
    return found


def _operations_by_resource(args: argparse.Namespace, resources: list[tuple[AclResourceType, str]],
                            ) -> dict[tuple[AclResourceType, str], list[AclOperation]]:
    if args.producer or args.consumer:
        if args.operation:
            raise UsageError("--operation cannot be combined with --producer or --consumer")
        if args.consumer and not args.group:
            raise UsageError("--consumer needs --group")
        wanted: dict[tuple[AclResourceType, str], list[AclOperation]] = defaultdict(list)
        for kind, name in resources:
            if kind == AclResourceType.TOPIC:
                if args.producer:
                    wanted[(kind, name)] += [AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.CREATE]
                if args.consumer:
                    wanted[(kind, name)] += [AclOperation.READ, AclOperation.DESCRIBE]
            elif kind == AclResourceType.GROUP and args.consumer:
                wanted[(kind, name)].append(AclOperation.READ)
            elif kind == AclResourceType.TRANSACTIONAL_ID and args.producer:
                wanted[(kind, name)] += [AclOperation.WRITE, AclOperation.DESCRIBE]
        if args.producer and args.idempotent:
            wanted[(AclResourceType.CLUSTER, CLUSTER_NAME)].append(AclOperation.IDEMPOTENT_WRITE)
        return dict(wanted)
    operations = [_operation(text) for text in args.operation] or [AclOperation.ALL]
    return {resource: operations for resource in resources}


def _entries(args: argparse.Namespace) -> list[tuple[str, str, AclPermissionType]]:
    allow_hosts = args.allow_host or ["*"]
    deny_hosts = args.deny_host or ["*"]
    for principal in args.allow_principal + args.deny_principal:
        if ":" not in principal:
            raise UsageError(f"principal {principal!r} is not Type:name (e.g. User:alice)")
    return ([(p, h, AclPermissionType.ALLOW) for p in args.allow_principal for h in allow_hosts]
            + [(p, h, AclPermissionType.DENY) for p in args.deny_principal for h in deny_hosts])


def acl_bindings(args: argparse.Namespace, pattern: AclPatternType) -> list[AclBinding]:
    resources = _patterns(args, pattern)
    if not resources:
        raise UsageError("name a resource: --topic, --group, --cluster, --transactional-id or --delegation-token")
    entries = _entries(args)
    return [AclBinding(kind, name, pattern, principal, host, operation, permission)
            for (kind, name), operations in _operations_by_resource(args, resources).items()
            for operation in operations for principal, host, permission in entries]


def _pattern_text(kind: AclResourceType, name: str, pattern: AclPatternType) -> str:
    return f"ResourcePattern(resourceType={kind.name}, name={name}, patternType={pattern.name})"


def _entry_text(acl: AclBinding) -> str:
    return (f"(principal={acl.principal}, host={acl.host}, operation={acl.operation.name}, "
            f"permissionType={acl.permission_type.name})")


def _print_grouped(heading: str, acls: Iterable[AclBinding]) -> None:
    grouped: dict[tuple[AclResourceType, str, AclPatternType], list[AclBinding]] = defaultdict(list)
    for acl in acls:
        grouped[(acl.resource_type, acl.name, acl.pattern_type)].append(acl)
    for (kind, name, pattern), entries in sorted(grouped.items()):
        print(f"{heading} `{_pattern_text(kind, name, pattern)}`: ")
        for acl in entries:
            print(f" \t{_entry_text(acl)} ")
        print()


@guarded("acls")
def run(args: argparse.Namespace) -> int:
    action = one_action(args, ("--add", "--remove", "--list"))
    pattern = PATTERNS.get(args.resource_pattern_type.lower())
    if pattern is None:
        raise UsageError(f"--resource-pattern-type {args.resource_pattern_type!r}: literal, prefixed, any or match")
    if action == "--add" and pattern not in (AclPatternType.LITERAL, AclPatternType.PREFIXED):
        raise UsageError("--add takes --resource-pattern-type literal or prefixed")
    if action != "--list" and args.principal:
        raise UsageError("--principal works with --list only; use --allow-principal or --deny-principal")
    if action == "--add" and not (args.allow_principal or args.deny_principal):
        raise UsageError("--add needs --allow-principal or --deny-principal")
    admin = open_admin(args)
    try:
        if action == "--add":
            return _add(admin, args, pattern)
        if action == "--remove":
            return _remove(admin, args, pattern)
        return _list(admin, args, pattern)
    finally:
        admin.close()


def _add(admin: AdminClient, args: argparse.Namespace, pattern: AclPatternType) -> int:
    bindings = acl_bindings(args, pattern)
    _print_grouped("Adding ACLs for resource", bindings)
    for binding, error in admin.create_acls(bindings).items():
        if error is not None:
            raise ToolError(f"cannot add {_entry_text(binding)}: {explain(error, args)}")
    return _list(admin, args, pattern)


def _remove(admin: AdminClient, args: argparse.Namespace, pattern: AclPatternType) -> int:
    if args.allow_principal or args.deny_principal:
        filters = [AclBindingFilter(b.resource_type, b.name, b.pattern_type, b.principal, b.host, b.operation,
                                    b.permission_type) for b in acl_bindings(args, pattern)]
    else:
        resources = _patterns(args, pattern)
        if not resources:
            raise UsageError("name a resource to remove ACLs of")
        filters = [AclBindingFilter(kind, name, pattern) for kind, name in resources]
        if not args.force and not _confirmed(resources, pattern):
            return 0
    for outcome in admin.delete_acls(filters).values():
        if isinstance(outcome, KafkaException):
            raise ToolError(f"cannot remove ACLs: {explain(outcome, args)}")
    return _list(admin, args, pattern)


def _confirmed(resources: list[tuple[AclResourceType, str]], pattern: AclPatternType) -> bool:
    if not sys.stdin.isatty():
        raise UsageError("removing every ACL of a resource needs --force when not run interactively")
    for kind, name in resources:
        answer = input(f"Are you sure you want to delete all ACLs for resource filter "
                       f"`{_pattern_text(kind, name, pattern)}`? (y/n) ")
        if answer.strip().lower() not in ("y", "yes"):
            return False
    return True


def _list(admin: AdminClient, args: argparse.Namespace, pattern: AclPatternType) -> int:
    resources = _patterns(args, pattern)
    principals = args.principal or [None]
    filters = ([AclBindingFilter(kind, name, pattern, principal) for kind, name in resources
                for principal in principals] if resources
               else [AclBindingFilter(principal=principal) for principal in principals])
    found: dict[AclBinding, None] = {}
    for acl_filter in filters:
        for acl in admin.describe_acls(acl_filter):
            found[acl] = None
    _print_grouped("Current ACLs for resource", found)
    return 0
