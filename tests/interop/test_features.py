"""Feature flags (KIP-584) as a client sees them: ApiVersions v3+ names the features the broker
supports and the levels the cluster finalized, decoded by kafka-python."""

from __future__ import annotations

import pytest
from kafka.protocol.metadata import ApiVersionsRequest, ApiVersionsResponse

from gregor.metadata.features import SUPPORTED_FEATURES
from tests.interop.test_offset_for_leader_epoch import exchange

pytestmark = pytest.mark.interop


@pytest.mark.parametrize("version", [3, 4])
def test_api_versions_reports_supported_and_finalized_features(broker, version):
    response = exchange(broker.port, ApiVersionsRequest(client_software_name="t", client_software_version="1"),
                        ApiVersionsResponse, version)
    supported = {f.name: (f.min_version, f.max_version) for f in response.supported_features}
    assert supported == {f.name: (f.min_level, f.max_level) for f in SUPPORTED_FEATURES}
    finalized = {f.name: (f.min_version_level, f.max_version_level) for f in response.finalized_features}
    assert finalized["metadata.version"] == (21, 21)
    assert response.finalized_features_epoch >= 0
