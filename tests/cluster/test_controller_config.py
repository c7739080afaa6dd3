"""A controller-only node reads the same controller keys as a combined node (delete.topic.enable,
defaults, the static config), and applies the `unclean.leader.election.enable` in force for a
topic: its override, else the cluster's dynamic default, else the static config (Kafka's order)."""

from __future__ import annotations

import uuid

from gregor.broker.config import BrokerConfig
from gregor.broker.controller_server import ControllerServer, controller_config
from gregor.metadata.delta import MetadataDelta
from gregor.metadata.image import BROKER_RESOURCE, TOPIC_RESOURCE, MetadataImage
from gregor.metadata.loader import MetadataLoader
from gregor.protocol.messages.metadata_records.config_record import ConfigRecord
from gregor.protocol.messages.metadata_records.topic_record import TopicRecord

KEY = "unclean.leader.election.enable"


def server(static: str | None, records: list) -> ControllerServer:
    properties = {"process.roles": "controller", "listeners": "CONTROLLER://127.0.0.1:1",
                  "controller.quorum.voters": "1@127.0.0.1:1"}
    if static is not None:
        properties[KEY] = static
    node = ControllerServer(BrokerConfig(properties))
    delta = MetadataDelta(MetadataImage())
    for offset, record in enumerate([TopicRecord(name="t", topic_id=uuid.UUID(int=3)), *records], 1):
        delta.replay(record, offset)
    node.loader = MetadataLoader(delta.apply())
    return node


def test_the_topic_override_wins_then_the_dynamic_default_then_the_static_config():
    assert server(None, []).unclean_allowed("t") is False
    assert server("true", []).unclean_allowed("t") is True
    default_on = ConfigRecord(resource_type=BROKER_RESOURCE, resource_name="", name=KEY, value="true")
    assert server(None, [default_on]).unclean_allowed("t") is True
    topic_off = ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name="t", name=KEY, value="false")
    assert server("true", [default_on, topic_off]).unclean_allowed("t") is False


def test_a_controller_only_node_honours_the_controller_keys():
    config = BrokerConfig({"process.roles": "controller", "listeners": "CONTROLLER://127.0.0.1:1",
                           "controller.quorum.voters": "1@127.0.0.1:1", "delete.topic.enable": "false",
                           "num.partitions": "4", "default.replication.factor": "2"})
    decided = ControllerServer(config).controller.config
    assert decided == controller_config(config)
    assert (decided.delete_topic_enable, decided.default_num_partitions, decided.default_replication_factor) == \
        (False, 4, 2)
