"""kafka-python is the oracle of these tests; its 0.8/0.9 lz4 framing needs an xxhash it may not have."""

from __future__ import annotations

import kafka.codec as kafka_codec
import pytest

from tests.unit.records.helpers import XxhashShim


@pytest.fixture(autouse=True)
def old_kafka_lz4(monkeypatch):
    """Give kafka.codec an xxhash backed by liblz4 when the xxhash package is not installed."""
    if kafka_codec.xxhash is None:
        monkeypatch.setattr(kafka_codec, "xxhash", XxhashShim)
