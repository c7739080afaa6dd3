"""The sampler's arithmetic over a scripted cluster: throughput from log-end growth, lag from
committed offsets, failures reported as the status instead of stopping the charts."""

from __future__ import annotations

from types import SimpleNamespace

from gregor.client import KafkaException, TopicPartition
from gregor.client.errors import ClientErrorCode
from gregor.client.network import Node, PartitionMetadata
from gregor.console.brokers import BrokerRegistry
from gregor.console.sampler import Sampler


class ScriptedCluster:
    """What the sampler asks of an Inspector and its AdminClient, answered from plain data."""

    def __init__(self) -> None:
        self.ends = {TopicPartition("t", 0): 0, TopicPartition("t", 1): 0}
        self.commits = {"g": {TopicPartition("t", 0): 0}}
        self.down: KafkaException | None = None
        self.registry = BrokerRegistry()
        self.admin = SimpleNamespace(
            list_topics=lambda internal: self._answer({"t": None}),
            describe_topics=lambda names: {"t": SimpleNamespace(partitions=[
                PartitionMetadata("t", index, 1, 0, (1,), (1,)) for index in (0, 1)])},
            list_consumer_groups=lambda: [SimpleNamespace(group_id=group) for group in self.commits])

    def _answer(self, value):
        if self.down is not None:
            raise self.down
        return value

    def brokers(self, partitions):
        return self.registry.observe([Node(1, "h", 1)], [1, 2], now_ms=0), 1, "c"

    def offsets(self, partitions, spec):
        return {tp: self.ends[tp] for tp in partitions}

    def committed(self, group):
        return dict(self.commits[group])


def test_rates_and_lag_come_from_successive_samples():
    cluster = ScriptedCluster()
    now = [100.0]
    sampler = Sampler(cluster, interval_s=1, history_s=60, clock=lambda: now[0])  # type: ignore[arg-type]
    sampler.sample_once()
    cluster.ends = {TopicPartition("t", 0): 30, TopicPartition("t", 1): 10}
    cluster.commits["g"][TopicPartition("t", 0)] = 12
    now[0] = 102.0
    sampler.sample_once()
    snapshot = sampler.snapshot()
    assert snapshot["topics"] == {"t": [(102000, 20.0)]}  # 40 records in 2 s
    assert snapshot["group_lag"] == {"g": [(100000, 0), (102000, 18)]}  # 30 - 12, uncommitted partitions aside
    assert snapshot["group_rate"] == {"g": [(102000, 6.0)]}
    assert sampler.topic_rate("t") == 20.0
    assert snapshot["status"]["reachable"] is True
    assert (snapshot["status"]["live_brokers"], snapshot["status"]["down_brokers"]) == (1, 1)

    cluster.ends = {TopicPartition("t", 0): 0, TopicPartition("t", 1): 0}  # deleted and created again
    now[0] = 103.0
    sampler.sample_once()
    assert sampler.topic_rate("t") == 0.0


def test_a_failed_sample_is_the_status_and_the_next_one_clears_it():
    cluster = ScriptedCluster()
    now = [100.0]
    sampler = Sampler(cluster, interval_s=1, history_s=60, clock=lambda: now[0])  # type: ignore[arg-type]
    cluster.down = KafkaException(ClientErrorCode._ALL_BROKERS_DOWN, "no broker answered")
    sampler.sample_once()
    status = sampler.status
    assert status.reachable is False and "no broker answered" in status.error and status.since_ms == 100000
    now[0] = 101.0
    sampler.sample_once()
    assert sampler.status.since_ms == 100000  # down since the first failure
    cluster.down = None
    now[0] = 102.0
    sampler.sample_once()
    assert sampler.status.reachable is True and sampler.status.since_ms == 102000
