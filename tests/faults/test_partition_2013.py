"""Jepsen's 2013 Kafka scenario on Gregor, with the protection Kafka added since: RF=3,
min.insync.replicas=2, acks=all, the partitions made by the fault proxy (tools/faults/proxy.py).

Clean elections (the default): the leader cut from both followers keeps its clients and its
controller. Its followers stop fetching, it shrinks the ISR to itself, and from then on every
acks=all write is refused (NOT_ENOUGH_REPLICAS, or NOT_ENOUGH_REPLICAS_AFTER_APPEND for the ones
appended while the ISR still held the followers); no write sent during the cut is acknowledged
before the heal. After healing, nothing acknowledged is missing and the checker finds no anomaly.

Unclean elections (`unclean.leader.election.enable=true`): what Kafka documents is that an
out-of-sync replica may become leader when no ISR member is alive, and that the records it lacks
are lost, acknowledged or not. With min.insync.replicas=2 an acknowledged record was on every ISR
member at the time, so the only acknowledged records an unclean election can lose are those
acknowledged after the new leader had left the ISR. The test makes exactly that happen: the third
replica is cut off (the ISR shrinks to the other two, which keep acknowledging), then those two are
killed; the controller elects the cut-off replica uncleanly, the other two come back as its
followers and truncate. Acknowledged records are lost (the test requires some, else it showed
nothing), and every one of them was acknowledged after the third replica was cut off (one sent
just before the cut may still have been on its way to the third replica: its acknowledgement came
from the two that were left).
"""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Producer

from tools.faults.checker import check
from tools.faults.cluster import Cluster
from tools.faults.history import History
from tools.faults.workload import ProducerWorker, Values, final_read

pytestmark = [pytest.mark.slow, pytest.mark.interop, pytest.mark.timeout(300)]

TOPIC = "jepsen2013"


class Probe:
    """A non-idempotent acks=all producer without retries: each broker answer is its outcome, so a
    refusal shows as NOT_ENOUGH_REPLICAS instead of a retry. Its values are negative, unique, and
    not in the history (read back, they are values nobody acknowledged, which is no anomaly)."""

    def __init__(self, bootstrap: str) -> None:
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": False,
                                  "retries": 0, "linger.ms": 0, "message.timeout.ms": 4000,
                                  "request.timeout.ms": 4000})
        self.outcomes: list[tuple[float, float, str]] = []  # (sent, answered, "ok" or error name)
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        value = 0
        while not self.stopping.is_set():
            sent = time.monotonic()
            value -= 1

            def done(error, _message, sent=sent) -> None:
                self.outcomes.append((sent, time.monotonic(), "ok" if error is None else error.name()))
            self.producer.produce(TOPIC, str(value).encode(), partition=0, on_delivery=done)
            self.producer.poll(0.1)
        self.producer.flush(10)


def _history_times(history: History) -> dict[int, float]:
    """value -> when its send was invoked (monotonic clock)."""
    return {op["value"][1]: history.started + op["time"] for op in history.ops
            if op["f"] == "send" and op["type"] == "invoke"}


def _acknowledged(history: History) -> list[tuple[float, int]]:
    """(monotonic time of the acknowledgement, value) of every acknowledged send."""
    return [(history.started + op["time"], op["value"][2]) for op in history.ops
            if op["f"] == "send" and op["type"] == "ok"]


def test_a_leader_cut_from_its_followers_refuses_writes_and_loses_nothing(tmp_path):
    cluster = Cluster(str(tmp_path), brokers=3, controllers=1).start()
    history = History()
    producer = probe = None
    try:
        cluster.create_topic(TOPIC, 1, 3, **{"min.insync.replicas": "2"})
        producer = ProducerWorker("producer-0", cluster.bootstrap, TOPIC, 1, history, Values(), rate=100)
        probe = Probe(cluster.bootstrap)
        producer.thread.start()
        probe.thread.start()
        time.sleep(2)
        leader_id = cluster.partitions(TOPIC)[0][0]
        leader = cluster.brokers[leader_id]
        followers = [node.name for node_id, node in cluster.brokers.items() if node_id != leader_id]
        cut_at = time.monotonic()
        cluster.proxy.partition([leader.name], followers)
        cluster.wait_for(TOPIC, lambda states: states[0][1] == [leader_id], timeout=30)
        shrunk_at = time.monotonic()
        time.sleep(3)  # writes go on against an ISR of one
        healed_at = time.monotonic()
        cluster.proxy.heal_all()
        cluster.wait_for_full_isr(TOPIC)
        probe.stopping.set()
        probe.thread.join(30)
        producer.finish(120)
        final_read(cluster.bootstrap, TOPIC, 1, history)
    finally:
        for worker in (producer, probe):
            if worker is not None:
                worker.stopping.set()
        cluster.stop()

    invoked = _history_times(history)
    during = [value for at, value in _acknowledged(history) if at < healed_at and invoked[value] > cut_at]
    assert not during, f"acknowledged while the leader was cut off: {during[:10]}"
    probed = [(answered, outcome) for sent, answered, outcome in probe.outcomes if shrunk_at <= sent < healed_at]
    assert probed and all(outcome != "ok" for _, outcome in probed), probed
    assert any(outcome in ("NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND") for _, outcome in probed), \
        probed
    report = check(history.ops)
    print(report.summary())
    assert report.valid, report.summary()
    assert any(at > healed_at and invoked[value] < healed_at for at, value in _acknowledged(history)), \
        "no write held through the cut was acknowledged after the heal"


def test_an_unclean_election_loses_only_writes_acknowledged_after_the_new_leader_left_the_isr(tmp_path):
    cluster = Cluster(str(tmp_path), brokers=3, controllers=1).start()
    history = History()
    producer = None
    try:
        cluster.create_topic(TOPIC, 1, 3, **{"min.insync.replicas": "2", "unclean.leader.election.enable": "true"})
        producer = ProducerWorker("producer-0", cluster.bootstrap, TOPIC, 1, history, Values(), rate=100)
        producer.thread.start()
        time.sleep(2)
        leader_id = cluster.partitions(TOPIC)[0][0]
        survivors = sorted(node_id for node_id in cluster.brokers if node_id != leader_id)
        third = survivors[0]
        keep = sorted([leader_id, survivors[1]])
        cut_at = time.monotonic()
        cluster.proxy.partition([cluster.brokers[third].name], [cluster.brokers[i].name for i in keep])
        cluster.wait_for(TOPIC, lambda states: sorted(states[0][1]) == keep, timeout=30)
        time.sleep(2)  # acknowledged by the two left in the ISR, missing on the third
        for node_id in keep:
            cluster.brokers[node_id].kill9()
        cluster.proxy.heal_all()
        cluster.wait_for(TOPIC, lambda states: states[0][0] == third, timeout=30)
        for node_id in keep:
            cluster.brokers[node_id].start()
        cluster.wait_for_full_isr(TOPIC)
        producer.finish(60)
        final_read(cluster.bootstrap, TOPIC, 1, history)
    finally:
        if producer is not None:
            producer.stopping.set()
        cluster.stop()

    report = check(history.ops)
    print(report.summary())
    lost = report.examples["lost-write"] + report.examples["unseen"]
    assert lost, "the unclean election lost nothing: the scenario did not happen"
    acknowledged_at = {value: at for at, value in _acknowledged(history)}
    early = [item["value"] for item in lost if acknowledged_at[item["value"]] <= cut_at]
    assert not early, f"lost records acknowledged while every replica was in the ISR: {early[:10]}"
    lost_values = {item["value"] for item in lost}
    assert all(set(item["values"]) & lost_values for item in report.examples["inconsistent-offsets"])
    # The new leader's log is shorter: the producer's next acknowledgements come at offsets below
    # those of the lost records (librdkafka then stops the idempotent producer: the sequence it
    # expected is gone with them, OUT_OF_ORDER_SEQUENCE_NUMBER, fatal).
    assert all(item["values"][0] in lost_values for item in report.examples["nonmonotonic-send"])
    for name in ("duplicate", "nonmonotonic-poll", "poll-skip"):
        assert report.counts[name] == 0, report.summary()
