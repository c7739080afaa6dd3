"""The controller's ACL and client-quota operations: records made, replayed into the image and
written back by a snapshot."""

from __future__ import annotations

import random

from gregor.controller.acl_control import create_acls, delete_acls
from gregor.controller.client_quota_control import QuotaAlteration, QuotaOp, alter_client_quotas
from gregor.metadata.acls import AclFilter, AclOperation, AclPermissionType, PatternType, ResourceType, StandardAcl
from gregor.metadata.client_quotas import quota_entity
from gregor.metadata.delta import MetadataDelta
from gregor.metadata.image import MetadataImage
from gregor.metadata.snapshot import image_records
from gregor.protocol.error_codes import ErrorCode

READ_ORDERS = StandardAcl(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", AclOperation.READ,
                          AclPermissionType.ALLOW)
WRITE_PREFIX = StandardAcl(ResourceType.TOPIC, "ord", PatternType.PREFIXED, "User:bob", "*", AclOperation.WRITE,
                           AclPermissionType.DENY)


def replayed(image: MetadataImage, records) -> MetadataImage:
    delta = MetadataDelta(image)
    for offset, record in enumerate(records, start=image.highest_offset + 1):
        delta.replay(record, offset)
    return delta.apply()


def test_created_acls_reach_the_image_once_and_invalid_ones_are_refused():
    rng = random.Random(1)
    bad = StandardAcl(ResourceType.CLUSTER, "other", PatternType.LITERAL, "User:a", "*", AclOperation.ALTER,
                      AclPermissionType.ALLOW)
    result = create_acls(MetadataImage(), [READ_ORDERS, WRITE_PREFIX, READ_ORDERS, bad], rng)
    assert [r.error for r in result.response] == [ErrorCode.NONE, ErrorCode.NONE, ErrorCode.NONE,
                                                  ErrorCode.INVALID_REQUEST]
    image = replayed(MetadataImage(), result.records)
    assert sorted(image.acls.values(), key=repr) == sorted([READ_ORDERS, WRITE_PREFIX], key=repr)
    again = create_acls(image, [READ_ORDERS], rng)
    assert again.response[0].error == ErrorCode.NONE and again.records == ()


def test_delete_filters_remove_what_they_match_each_acl_reported_once():
    image = replayed(MetadataImage(), create_acls(MetadataImage(), [READ_ORDERS, WRITE_PREFIX], random.Random(2)).records)
    result = delete_acls(image, [AclFilter(ResourceType.TOPIC, "orders", PatternType.MATCH), AclFilter(),
                                 AclFilter(operation=77)])
    assert sorted(result.response[0].deleted, key=repr) == sorted([READ_ORDERS, WRITE_PREFIX], key=repr)
    assert result.response[1].deleted == ()
    assert result.response[2].error == ErrorCode.INVALID_REQUEST
    assert replayed(image, result.records).acls == {}


def test_quota_alterations_are_validated_whole_and_replayed_by_entity():
    alice = quota_entity([("user", "alice")])
    alice_reports = quota_entity([("client-id", "reports"), ("user", "alice")])
    result = alter_client_quotas(MetadataImage(), [
        QuotaAlteration(alice, [QuotaOp("producer_byte_rate", 1024, False), QuotaOp("consumer_byte_rate", 2048, False)]),
        QuotaAlteration(quota_entity([("user", "alice"), ("client-id", "reports")]),
                        [QuotaOp("producer_byte_rate", 512, False)]),
        QuotaAlteration(quota_entity([("user", None)]), [QuotaOp("producer_byte_rate", 1.5, False)]),
        QuotaAlteration(quota_entity([("ip", "1.2.3.4"), ("user", "x")]), [QuotaOp("connection_creation_rate", 1, False)]),
        QuotaAlteration(quota_entity([("group", "g")]), [QuotaOp("producer_byte_rate", 1, False)]),
        QuotaAlteration(alice, [QuotaOp("no_such_quota", 1, False)]),
    ])
    assert [r.error for r in result.response] == [ErrorCode.NONE, ErrorCode.NONE] + [ErrorCode.INVALID_REQUEST] * 4
    image = replayed(MetadataImage(), result.records)
    assert dict(image.client_quotas[alice]) == {"producer_byte_rate": 1024, "consumer_byte_rate": 2048}
    assert dict(image.client_quotas[alice_reports]) == {"producer_byte_rate": 512}
    removed = alter_client_quotas(image, [QuotaAlteration(alice_reports, [QuotaOp("producer_byte_rate", 0, True)])])
    image = replayed(image, removed.records)
    assert alice_reports not in image.client_quotas
    assert validate_only_changes_nothing(image)


def validate_only_changes_nothing(image: MetadataImage) -> bool:
    entity = quota_entity([("client-id", None)])
    return alter_client_quotas(image, [QuotaAlteration(entity, [QuotaOp("producer_byte_rate", 10, False)])],
                               validate_only=True).records == ()


def test_a_snapshot_carries_acls_and_quotas():
    image = replayed(MetadataImage(), create_acls(MetadataImage(), [READ_ORDERS, WRITE_PREFIX], random.Random(3)).records)
    image = replayed(image, alter_client_quotas(image, [QuotaAlteration(
        quota_entity([("client-id", None)]), [QuotaOp("consumer_byte_rate", 100, False)])]).records)
    rebuilt = replayed(MetadataImage(), image_records(image))
    assert rebuilt.acls == image.acls
    assert {k: dict(v) for k, v in rebuilt.client_quotas.items()} == {k: dict(v) for k, v in image.client_quotas.items()}
