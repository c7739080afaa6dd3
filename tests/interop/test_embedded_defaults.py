"""DescribeConfigs reports the embedded node's development default for
group.initial.rebalance.delay.ms (0) as the default in force, and a value the user set as theirs."""

from __future__ import annotations

import pytest

from gregor.client import AdminClient
from gregor.client.admin import ConfigResource
from tests.broker_process import BrokerProcess

pytestmark = pytest.mark.interop
KEY = "group.initial.rebalance.delay.ms"


def described(process: BrokerProcess) -> tuple[str | None, bool]:
    admin = AdminClient({"bootstrap.servers": process.bootstrap})
    try:
        resource = ConfigResource("broker", "1")
        entry = admin.describe_configs([resource])[resource][KEY]
    finally:
        admin.close(5)
    return entry.value, entry.is_default


def test_the_embedded_default_is_described_as_the_default(broker):
    assert described(broker) == ("0", True)


def test_a_value_the_user_set_is_described_as_set(tmp_path):
    process = BrokerProcess(str(tmp_path / "data"), {KEY: "3000"})
    process.start()
    try:
        assert described(process) == ("3000", False)
    finally:
        process.stop()
