"""The authorizer's decisions over ACLs (Kafka's StandardAuthorizer semantics), one rule a test."""

from __future__ import annotations

import uuid

import pytest

from gregor.metadata.acls import (
    AclFilter, AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl, validate_acl,
)
from gregor.metadata.authorizer import Requestor, StandardAuthorizer

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
Op = AclOperation
ALICE = Requestor("User:alice", "10.0.0.1")
BOB = Requestor("User:bob", "10.0.0.2")


def acls(*entries: StandardAcl) -> dict[uuid.UUID, StandardAcl]:
    return {uuid.UUID(int=index + 1): acl for index, acl in enumerate(entries)}


def acl(name: str, principal: str = "User:alice", operation: AclOperation = Op.READ,
        permission: AclPermissionType = ALLOW, pattern: PatternType = LITERAL, host: str = "*",
        resource_type: ResourceType = TOPIC) -> StandardAcl:
    return StandardAcl(resource_type, name, pattern, principal, host, operation, permission)


def allowed(entries: dict, who: Requestor, operation: AclOperation, name: str = "orders",
            resource_type: ResourceType = TOPIC, **settings) -> bool:
    return StandardAuthorizer(**settings).authorize(entries, who, operation, resource_type, name)


def test_a_resource_without_acls_is_open_only_with_allow_everyone_if_no_acl_found():
    assert not allowed(acls(), ALICE, Op.READ)
    assert allowed(acls(), ALICE, Op.READ, allow_everyone_if_no_acl_found=True)
    # a resource that has ACLs (for anyone) is decided by them, whatever the flag says
    assert not allowed(acls(acl("orders", "User:bob")), ALICE, Op.READ, allow_everyone_if_no_acl_found=True)


def test_super_users_are_allowed_everything_even_against_a_deny():
    entries = acls(acl("orders", "User:alice", Op.ALL, DENY))
    assert allowed(entries, ALICE, Op.DELETE, super_users=["User:alice"])
    assert not allowed(entries, ALICE, Op.DELETE, super_users=["User:bob"])


def test_a_literal_allow_grants_its_operation_to_its_principal_only():
    entries = acls(acl("orders"))
    assert allowed(entries, ALICE, Op.READ)
    assert not allowed(entries, ALICE, Op.WRITE)
    assert not allowed(entries, BOB, Op.READ)
    assert not allowed(entries, ALICE, Op.READ, name="orders2")


@pytest.mark.parametrize("granted, asked, expected", [
    (Op.READ, Op.DESCRIBE, True), (Op.WRITE, Op.DESCRIBE, True), (Op.DELETE, Op.DESCRIBE, True),
    (Op.ALTER, Op.DESCRIBE, True), (Op.ALTER_CONFIGS, Op.DESCRIBE_CONFIGS, True),
    (Op.WRITE, Op.READ, False), (Op.DESCRIBE, Op.READ, False), (Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS, False),
    (Op.CREATE, Op.DESCRIBE, False), (Op.ALL, Op.CLUSTER_ACTION, True),
])
def test_operations_imply_others_as_in_kafka(granted, asked, expected):
    assert allowed(acls(acl("orders", operation=granted)), ALICE, asked) is expected


def test_a_deny_beats_any_allow_and_decides_only_its_own_operation():
    entries = acls(acl("*", operation=Op.ALL), acl("orders", operation=Op.READ, permission=DENY))
    assert not allowed(entries, ALICE, Op.READ)
    assert allowed(entries, ALICE, Op.DESCRIBE)  # DENY READ does not deny what READ implies
    assert allowed(entries, ALICE, Op.READ, name="payments")


def test_prefixed_and_wildcard_patterns():
    entries = acls(acl("pay", pattern=PREFIXED), acl("*", "User:bob", Op.WRITE))
    assert allowed(entries, ALICE, Op.READ, name="payments")
    assert allowed(entries, ALICE, Op.READ, name="pay")
    assert not allowed(entries, ALICE, Op.READ, name="orders-pay")
    assert allowed(entries, BOB, Op.WRITE, name="anything")
    assert not allowed(entries, BOB, Op.WRITE, name="x", resource_type=GROUP)  # types do not mix


def test_a_prefixed_deny_covers_the_names_it_starts():
    entries = acls(acl("*", operation=Op.ALL), acl("secret-", operation=Op.ALL, permission=DENY, pattern=PREFIXED))
    assert not allowed(entries, ALICE, Op.READ, name="secret-plans")
    assert allowed(entries, ALICE, Op.READ, name="public")


def test_the_wildcard_principal_and_hosts():
    entries = acls(acl("orders", "User:*"), acl("payments", host="10.0.0.1"))
    assert allowed(entries, BOB, Op.READ)
    assert allowed(entries, ALICE, Op.READ, name="payments")
    assert not allowed(entries, Requestor("User:alice", "10.9.9.9"), Op.READ, name="payments")


def test_authorize_by_resource_type_finds_an_allow_not_covered_by_a_deny():
    authorizer = StandardAuthorizer()
    some = acls(acl("logs-", operation=Op.WRITE, pattern=PREFIXED))
    assert authorizer.authorize_by_resource_type(some, ALICE, Op.WRITE, TOPIC)
    assert not authorizer.authorize_by_resource_type(some, BOB, Op.WRITE, TOPIC)
    covered = acls(acl("logs-x", operation=Op.WRITE), acl("logs-", operation=Op.WRITE, permission=DENY,
                                                           pattern=PREFIXED))
    assert not authorizer.authorize_by_resource_type(covered, ALICE, Op.WRITE, TOPIC)
    everything_denied = acls(acl("a", operation=Op.WRITE), acl("*", operation=Op.ALL, permission=DENY))
    assert not authorizer.authorize_by_resource_type(everything_denied, ALICE, Op.WRITE, TOPIC)


def test_the_index_follows_a_new_acl_mapping():
    authorizer = StandardAuthorizer()
    first = acls(acl("orders"))
    assert authorizer.authorize(first, ALICE, Op.READ, TOPIC, "orders")
    assert not authorizer.authorize(acls(acl("orders", "User:bob")), ALICE, Op.READ, TOPIC, "orders")


def test_filters_match_as_kafka_acl_binding_filters():
    literal = acl("orders")
    wildcard = acl("*", "User:bob")
    prefixed = acl("ord", pattern=PREFIXED)
    everything = [literal, wildcard, prefixed]
    match = AclFilter(TOPIC, "orders", PatternType.MATCH)
    assert [a for a in everything if match.matches(a)] == everything
    assert [a for a in everything if AclFilter(TOPIC, "orders", PatternType.LITERAL).matches(a)] == [literal]
    assert [a for a in everything if AclFilter(principal="User:bob").matches(a)] == [wildcard]
    assert [a for a in everything if AclFilter(pattern_type=PREFIXED).matches(a)] == [prefixed]
    assert not AclFilter(GROUP).matches(literal)
    assert AclFilter(operation=99).unknown_element() is not None
    assert AclFilter().unknown_element() is None


@pytest.mark.parametrize("bad", [
    acl("", operation=Op.READ), acl("other", resource_type=CLUSTER), acl("orders", principal="alice"),
    acl("orders", operation=Op.ANY), acl("orders", pattern=PatternType.MATCH), acl("orders", host=""),
])
def test_invalid_acls_are_refused_with_a_reason(bad):
    assert validate_acl(bad)
