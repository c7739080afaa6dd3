"""The embedded single node is a development broker: a new group's first consumer joins at once
(group.initial.rebalance.delay.ms=0, as in Kafka's development server.properties) unless the user
sets the key; nodes of a larger quorum keep Kafka's 3 s."""

from __future__ import annotations

import pytest

from gregor.broker.config import BrokerConfig

KEY = "group.initial.rebalance.delay.ms"
QUORUM = "1@127.0.0.1:19093,2@127.0.0.1:29093,3@127.0.0.1:39093"


def test_the_embedded_node_lets_a_group_in_at_once():
    config = BrokerConfig({})
    assert config.embedded
    assert config.get(KEY) == 0 and config.default(KEY) == "0"


def test_a_value_the_user_sets_wins():
    assert BrokerConfig({KEY: "3000"}).get(KEY) == 3000
    assert BrokerConfig({KEY: "250", "process.roles": "broker,controller"}).get(KEY) == 250


@pytest.mark.parametrize("properties", [
    {"process.roles": "broker", "node.id": "4", "controller.quorum.voters": QUORUM},
    {"process.roles": "broker,controller", "node.id": "1", "controller.quorum.voters": QUORUM,
     "listeners": "PLAINTEXT://127.0.0.1:19092,CONTROLLER://127.0.0.1:19093"},
])
def test_nodes_of_a_larger_quorum_keep_kafkas_default(properties):
    config = BrokerConfig(properties)
    assert not config.embedded
    assert config.get(KEY) == 3000 and config.default(KEY) == "3000"


def test_other_keys_keep_kafkas_defaults():
    config = BrokerConfig({})
    assert config.default("group.min.session.timeout.ms") == "6000"
    assert config.get("group.min.session.timeout.ms") == 6000
