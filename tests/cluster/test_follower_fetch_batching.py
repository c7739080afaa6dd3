"""A follower fetches every partition it follows from one leader in one request, and after each
answer all of them ask again together: a partition left out of the request in flight would wait
behind it, and the leader holds a request with nothing to send for replica.fetch.wait.max.ms. With
that wait set to 30 s, acks=all produces to one partition of a topic whose other partitions stay
idle must each be acknowledged in a replication round trip, not in 30 s (they were, once: the
broker sent a request for the first partition that asked again, before the others had)."""

from __future__ import annotations

import pytest
from confluent_kafka import Producer

from tests.cluster.brokers import Cluster

pytestmark = pytest.mark.slow

MAX_WAIT_MS = 30_000


@pytest.fixture
def cluster(tmp_path):
    # followers are never dropped from the ISR here, so every acknowledgement waits for both
    nodes = Cluster(tmp_path, overrides={"replica.fetch.wait.max.ms": str(MAX_WAIT_MS),
                                         "replica.lag.time.max.ms": str(4 * MAX_WAIT_MS)})
    yield nodes.start()
    nodes.stop()


def test_acks_all_produces_do_not_wait_behind_idle_partitions_of_the_same_leader(cluster):
    cluster.create_topic("busy", 6)
    cluster.wait_for_full_isr("busy")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0,
                         "message.timeout.ms": MAX_WAIT_MS // 3})
    for value in range(12):
        delivered: list[object] = []
        producer.produce("busy", str(value).encode(), partition=0,
                         on_delivery=lambda error, _message: delivered.append(error))
        assert producer.flush(MAX_WAIT_MS / 1000 / 3) == 0, f"record {value} not acknowledged in {MAX_WAIT_MS // 3} ms"
        assert delivered == [None]
    assert all(len(isr) == 3 for _, _, isr in cluster.partitions("busy").values())
