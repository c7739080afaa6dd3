"""Driving the coordinator's consumer protocol (KIP-848) in virtual time, as a broker would."""

from __future__ import annotations

import uuid

from gregor.coordinator.consumer.group import TopicInfo
from gregor.coordinator.consumer.heartbeat import HeartbeatRequest
from gregor.coordinator.consumer.results import HeartbeatResult
from tests.unit.coordinator.harness import Harness

T1 = uuid.UUID(int=1)
T2 = uuid.UUID(int=2)
REBALANCE_MS = 30_000


class ConsumerHarness(Harness):
    def set_topics(self, **partitions: int) -> None:
        """Topics by name with their partition counts; ids are T1, T2, ... in argument order."""
        self.coordinator.set_topics({name: TopicInfo(uuid.UUID(int=index + 1), name, count)
                                     for index, (name, count) in enumerate(partitions.items())})

    def cg(self, member_id: str, epoch: int, group: str = "g", owned=None, topics=None, regex=None,
           instance: str | None = None, assignor: str | None = None, rebalance: int = -1,
           version: int = 1) -> HeartbeatResult:
        if epoch == 0:
            rebalance = REBALANCE_MS if rebalance == -1 else rebalance
            owned = {} if owned is None else owned
            topics = ("t1",) if topics is None and regex is None else topics
        token = self.token("cg")
        self.apply(self.coordinator.consumer_group_heartbeat(token, HeartbeatRequest(
            group, member_id, epoch, instance_id=instance, rebalance_timeout_ms=rebalance,
            subscribed_topic_names=topics, subscribed_topic_regex=regex, server_assignor=assignor, owned=owned,
            client_id="client", client_host="/127.0.0.1", version=version), self.now))
        return self.answer(token)
