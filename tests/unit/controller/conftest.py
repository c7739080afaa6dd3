from __future__ import annotations

import random

import pytest

from tests.unit.controller.metadata_node import MetadataNode
from gregor.controller.operations import Endpoint
from gregor.controller.quorum_controller import ControllerConfig
from gregor.raft.memory_log import MemoryLog
from gregor.raft.quorum_state_file import QuorumStateFile

NOW = 1_700_000_000_000


def endpoints(broker_id: int) -> list[Endpoint]:
    return [Endpoint("PLAINTEXT", f"host{broker_id}", 9092)]


def start_node(tmp_path, brokers: int = 1, **config) -> MetadataNode:
    """A started node (id 1) over a memory log, with brokers 1..`brokers` registered and unfenced."""
    node = MetadataNode.over(MemoryLog(), QuorumStateFile(str(tmp_path)), ControllerConfig(node_id=1, **config),
                             "cluster-1", random.Random(7))
    node.start(NOW)
    node.bootstrap(endpoints(1), "rack-a", NOW)
    for broker_id in range(2, brokers + 1):
        node.commit(node.controller.register_broker(broker_id, endpoints(broker_id)), NOW)
    return node


@pytest.fixture
def node(tmp_path) -> MetadataNode:
    return start_node(tmp_path)


@pytest.fixture
def cluster(tmp_path) -> MetadataNode:
    return start_node(tmp_path, brokers=3)
