"""UpdateFeatures (KIP-584) against a real broker process, driven by kafka-python's admin client
(a client nobody here wrote) and by Gregor's: a level finalized through the controller reaches
ApiVersions with a new finalized_features_epoch; refusals carry INVALID_UPDATE_VERSION."""

from __future__ import annotations

import pytest
from kafka.admin import KafkaAdminClient
from kafka.errors import InvalidUpdateVersionError

from gregor.client import AdminClient
from gregor.client.features import FeatureUpdate, UpgradeType

pytestmark = pytest.mark.interop


@pytest.fixture
def kafka_admin(broker):
    admin = KafkaAdminClient(bootstrap_servers=f"127.0.0.1:{broker.port}", request_timeout_ms=10000)
    yield admin
    admin.close()


def test_kafka_python_downgrades_upgrades_and_disables_a_feature_and_the_epoch_moves(kafka_admin):
    before = kafka_admin.describe_features()
    assert before["transaction.version"]["finalized"] == (2, 2)
    assert kafka_admin.update_features({"transaction.version": ("SAFE_DOWNGRADE", 1)}, validate_only=True) == {
        "transaction.version": "OK"}
    assert kafka_admin.describe_features()["transaction.version"]["finalized"] == (2, 2)
    assert kafka_admin.update_features({"transaction.version": ("SAFE_DOWNGRADE", 1)}) == {"transaction.version": "OK"}
    lowered = kafka_admin.describe_features()
    assert lowered["transaction.version"]["finalized"] == (1, 1)
    assert lowered["transaction.version"]["finalized_epoch"] > before["metadata.version"]["finalized_epoch"]
    assert kafka_admin.update_features({"transaction.version": ("SAFE_DOWNGRADE", 0)}) == {"transaction.version": "OK"}
    disabled = kafka_admin.describe_features()
    assert "finalized" not in disabled["transaction.version"]
    assert disabled["metadata.version"]["finalized_epoch"] > lowered["metadata.version"]["finalized_epoch"]
    assert kafka_admin.update_features({"transaction.version": 2}) == {"transaction.version": "OK"}
    assert kafka_admin.describe_features()["transaction.version"]["finalized"] == (2, 2)


def test_kafka_python_gets_invalid_update_version_for_a_metadata_version_downgrade(kafka_admin):
    with pytest.raises(InvalidUpdateVersionError, match="might delete metadata information"):
        kafka_admin.update_features({"metadata.version": ("SAFE_DOWNGRADE", 20)})
    assert kafka_admin.describe_features()["metadata.version"]["finalized"] == (21, 21)


def test_gregor_admin_describes_and_updates_features(broker):
    with AdminClient({"bootstrap.servers": f"127.0.0.1:{broker.port}"}) as admin:
        described = admin.describe_features(timeout=10)
        assert described.finalized_features["metadata.version"] == 21
        assert described.supported_features["transaction.version"] == (1, 2)
        assert admin.update_features({"group.version": FeatureUpdate(0)}, timeout=10)["group.version"].code == 95
        assert admin.update_features({"group.version": FeatureUpdate(0, UpgradeType.SAFE_DOWNGRADE)},
                                     validate_only=True, timeout=10) == {"group.version": None}
        assert admin.describe_features(timeout=10).finalized_features["group.version"] == 1
