"""A cluster of real processes for replication tests: controller-only voters and broker-only
nodes (`process.roles=broker`) on loopback ports, with short sessions so failover is quick."""

from __future__ import annotations

import os
import threading
import time
from typing import Callable

from confluent_kafka.admin import AdminClient, NewTopic

from gregor.records.batch import scan_batches
from gregor.storage.log import Log, LogConfig

from tests.broker_process import BrokerProcess
from tests.cluster.quorum import CLUSTER_ID

FAST_FAILOVER = {"broker.heartbeat.interval.ms": "300", "replica.lag.time.max.ms": "3000",
                 "replica.fetch.backoff.ms": "200", "replica.high.watermark.checkpoint.interval.ms": "500"}
CONTROLLER_SESSION = {"broker.session.timeout.ms": "1500"}


class Cluster:
    def __init__(self, root, brokers: int = 3, controllers: int = 1, overrides: dict[str, str] | None = None,
                 controller_overrides: dict[str, str] | None = None) -> None:
        self.root = root
        self.controllers: list[BrokerProcess] = []
        for node_id in range(1, controllers + 1):
            os.makedirs(root / f"controller{node_id}", exist_ok=True)
            self.controllers.append(BrokerProcess(str(root / f"controller{node_id}" / "data")))
        voters = ",".join(f"{i}@127.0.0.1:{node.port}" for i, node in enumerate(self.controllers, 1))
        for node_id, node in enumerate(self.controllers, 1):
            node.overrides = {"process.roles": "controller", "node.id": str(node_id), "cluster.id": CLUSTER_ID,
                              "listeners": f"CONTROLLER://127.0.0.1:{node.port}", "controller.quorum.voters": voters,
                              **CONTROLLER_SESSION, **(controller_overrides or {})}
        self.brokers: dict[int, BrokerProcess] = {}
        for node_id in range(controllers + 1, controllers + brokers + 1):
            os.makedirs(root / f"broker{node_id}", exist_ok=True)
            self.brokers[node_id] = BrokerProcess(str(root / f"broker{node_id}" / "data"), {
                "process.roles": "broker", "node.id": str(node_id), "cluster.id": CLUSTER_ID,
                "controller.quorum.voters": voters, "controller.listener.names": "CONTROLLER",
                "default.replication.factor": str(min(brokers, 3)),
                "offsets.topic.replication.factor": str(min(brokers, 3)), "offsets.topic.num.partitions": "6",
                **FAST_FAILOVER, **(overrides or {})})

    def start(self) -> Cluster:
        """Every node started and the brokers registered; on a failure, the nodes already started
        are stopped before it is raised (a fixture's teardown does not run when its setup fails)."""
        try:
            for node in self.controllers:
                node.start()
            self._parallel([node.start for node in self.brokers.values()])
            self.wait_for_brokers(len(self.brokers))
        except BaseException:
            self.stop()
            raise
        return self

    def wait_for_brokers(self, count: int, timeout: float = 30) -> None:
        """Until the metadata lists `count` live (registered, unfenced) brokers."""
        deadline = time.monotonic() + timeout
        while len(self.admin().list_topics(timeout=10).brokers) != count:
            if time.monotonic() > deadline:
                raise AssertionError(f"fewer than {count} live brokers after {timeout}s")
            time.sleep(0.2)

    def stop(self) -> None:
        self._parallel([node.stop for node in self.brokers.values()])
        for node in self.controllers:
            node.stop()

    @staticmethod
    def _parallel(actions: list[Callable[[], None]]) -> None:
        failures: list[BaseException] = []

        def run(action: Callable[[], None]) -> None:
            try:
                action()
            except BaseException as error:  # noqa: BLE001 - re-raised below
                failures.append(error)
        threads = [threading.Thread(target=run, args=(action,)) for action in actions]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        if failures:
            raise failures[0]

    @property
    def bootstrap(self) -> str:
        return ",".join(node.bootstrap for node in self.brokers.values())

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap})

    def create_topic(self, name: str, partitions: int, replication_factor: int = 3, **config: str) -> None:
        admin = self.admin()
        futures = admin.create_topics([NewTopic(name, partitions, replication_factor, config=config)],
                                      operation_timeout=30, request_timeout=30)
        futures[name].result(40)
        self.wait_for(name, lambda states: len(states) == partitions and all(
            leader >= 0 and len(isr) == replication_factor for leader, _, isr in states.values()))

    def partitions(self, topic: str) -> dict[int, tuple[int, list[int], list[int]]]:
        """partition -> (leader, replicas, isr), as the cluster's metadata shows it now."""
        metadata = self.admin().list_topics(topic, timeout=10)
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            return {}
        return {p.id: (p.leader, list(p.replicas), list(p.isrs)) for p in found.partitions.values()}

    def wait_for(self, topic: str, condition: Callable[[dict], bool], timeout: float = 60):
        deadline = time.monotonic() + timeout
        while True:
            states = self.partitions(topic)
            if condition(states):
                return states
            if time.monotonic() > deadline:
                raise AssertionError(f"{topic} did not reach the expected state within {timeout}s: {states}\n"
                                     + "\n".join(node.output()[-2500:] for node in self.brokers.values()))
            time.sleep(0.2)

    def leader_of(self, topic: str, partition: int) -> int:
        states = self.wait_for(topic, lambda s: partition in s and s[partition][0] >= 0)
        return states[partition][0]

    def wait_for_full_isr(self, topic: str, replication_factor: int = 3, timeout: float = 60) -> dict:
        return self.wait_for(topic, lambda states: bool(states) and all(
            leader >= 0 and len(isr) == replication_factor for leader, _, isr in states.values()), timeout)


def replica_batches(node: BrokerProcess, topic: str, partition: int) -> list[tuple[int, int, int]]:
    """(base offset, last offset, crc) of every batch in a stopped broker's replica of a partition."""
    log = Log(os.path.join(node.data_dir, f"{topic}-{partition}"), LogConfig(), int(time.time() * 1000))
    try:
        data = log.read_bytes(log.log_start_offset, 1 << 30)
        return [(header.base_offset, header.last_offset, header.crc) for header, _ in scan_batches(data)[0]]
    finally:
        log.close()
