"""UpdateFeatures' rules on the controller (Kafka's FeatureControlManager): all or nothing,
INVALID_UPDATE_VERSION with Kafka's messages, records replayed into the image and kept by a snapshot."""

from __future__ import annotations

import uuid

import pytest

from gregor.controller.feature_control import FeatureUpdate, UpgradeType, update_features
from gregor.metadata.delta import MetadataDelta
from gregor.metadata.features import SUPPORTED_FEATURES, bootstrap_levels
from gregor.metadata.image import MetadataImage
from gregor.metadata.snapshot import image_records
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FeatureLevelRecord, RegisterBrokerRecord

BUILD_RANGES = {f.name: (f.min_level, f.max_level) for f in SUPPORTED_FEATURES}


def replayed(image: MetadataImage, records) -> MetadataImage:
    delta = MetadataDelta(image)
    for offset, record in enumerate(records, start=image.highest_offset + 1):
        delta.replay(record, offset)
    return delta.apply()


def cluster(broker_ranges=(BUILD_RANGES, BUILD_RANGES)) -> MetadataImage:
    records: list = [FeatureLevelRecord(name=name, feature_level=level) for name, level in bootstrap_levels().items()]
    for broker_id, ranges in enumerate(broker_ranges, start=1):
        records.append(RegisterBrokerRecord(
            broker_id=broker_id, incarnation_id=uuid.UUID(int=broker_id), broker_epoch=5,
            features=[RegisterBrokerRecord.BrokerFeature(name=n, min_supported_version=lo, max_supported_version=hi)
                      for n, (lo, hi) in ranges.items()]))
    return replayed(MetadataImage(), records)


def test_an_update_becomes_a_feature_level_record_and_a_snapshot_keeps_it():
    image = cluster()
    result = update_features(image, [FeatureUpdate("transaction.version", 1, UpgradeType.SAFE_DOWNGRADE)], False, 1)
    assert result.response.error == ErrorCode.NONE
    assert result.records == (FeatureLevelRecord(name="transaction.version", feature_level=1),)
    upgraded = replayed(image, result.records)
    assert upgraded.features["transaction.version"] == 1
    assert replayed(MetadataImage(), image_records(upgraded)).features == upgraded.features
    assert replayed(MetadataImage(), image_records(upgraded)).brokers[1].supported_features == BUILD_RANGES


def test_validate_only_writes_nothing():
    result = update_features(cluster(), [FeatureUpdate("transaction.version", 2)], True, 1)
    assert result.response.error == ErrorCode.NONE and result.records == ()


def test_disable_and_downgrade_need_a_downgrade_type():
    image = cluster()
    refused = update_features(image, [FeatureUpdate("group.version", 0)], False, 1).response
    assert refused.error == ErrorCode.INVALID_UPDATE_VERSION
    assert refused.message == ("Invalid update version 0 for feature group.version. Can't downgrade the version of "
                               "this feature without setting the upgrade type to either safe or unsafe downgrade.")
    disabled = update_features(image, [FeatureUpdate("group.version", 0, UpgradeType.SAFE_DOWNGRADE)], False, 1)
    assert disabled.response.error == ErrorCode.NONE
    assert "group.version" not in replayed(image, disabled.records).features
    lowered = replayed(image, [FeatureLevelRecord(name="transaction.version", feature_level=1)])
    newer = update_features(lowered, [FeatureUpdate("transaction.version", 2, UpgradeType.SAFE_DOWNGRADE)], False, 1)
    assert newer.response.message.endswith("Can't downgrade to a newer version.")


@pytest.mark.parametrize("update, message", [
    (FeatureUpdate("metadata.version", 20, UpgradeType.SAFE_DOWNGRADE),
     "Invalid metadata.version 20. Refusing to perform the requested downgrade because it might delete metadata "
     "information."),
    (FeatureUpdate("metadata.version", 20, UpgradeType.UNSAFE_DOWNGRADE),
     "Invalid metadata.version 20. Unsafe metadata downgrade is not supported in this version."),
    (FeatureUpdate("metadata.version", 22),
     "Invalid update version 22 for feature metadata.version. Local controller 1 only supports versions 1-21."),
    (FeatureUpdate("transaction.version", 3),
     "Invalid update version 3 for feature transaction.version. Local controller 1 only supports versions 1-2."),
    (FeatureUpdate("no.such.version", 1),
     "Invalid update version 1 for feature no.such.version. Local controller 1 does not support this feature."),
    (FeatureUpdate("transaction.version", -1),
     "Invalid update version -1 for feature transaction.version. A feature version cannot be less than 0."),
    (FeatureUpdate("transaction.version", 2, 7),
     "Invalid update version 2 for feature transaction.version. The controller does not support the given "
     "upgrade type."),
])
def test_refusals_carry_kafkas_error_and_message(update, message):
    result = update_features(cluster(), [update], False, 1)
    assert (result.response.error, result.response.message, result.records) == (
        ErrorCode.INVALID_UPDATE_VERSION, message, ())


def test_every_registered_broker_must_support_the_level_and_one_refusal_refuses_all():
    old = dict(BUILD_RANGES, **{"transaction.version": (1, 1)})
    image = cluster((BUILD_RANGES, old))
    result = update_features(image, [FeatureUpdate("group.version", 0, UpgradeType.SAFE_DOWNGRADE),
                                     FeatureUpdate("transaction.version", 2)], False, 1)
    assert result.records == ()
    assert result.response.message == ("Invalid update version 2 for feature transaction.version. Broker 2 does not "
                                       "support the given version. It supports 1 to 1.")
    unnamed = cluster((BUILD_RANGES, {"metadata.version": (1, 21)}))
    assert update_features(unnamed, [FeatureUpdate("transaction.version", 2)], False, 1).response.message.endswith(
        "Broker 2 does not support this feature.")


def test_a_feature_depends_on_the_minimum_metadata_version():
    image = replayed(MetadataImage(), [FeatureLevelRecord(name="metadata.version", feature_level=6)])
    result = update_features(image, [FeatureUpdate("transaction.version", 2)], False, 1)
    assert result.response.message == ("Invalid update version 2 for feature transaction.version. transaction.version "
                                       "could not be set to 2 because it depends on metadata.version=7 (3.3-IV3)")
    both = update_features(image, [FeatureUpdate("metadata.version", 7), FeatureUpdate("transaction.version", 2)],
                           False, 1)
    assert both.response.error == ErrorCode.NONE and len(both.records) == 2
