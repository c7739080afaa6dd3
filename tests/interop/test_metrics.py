"""The Prometheus endpoint of a real `gregor server` process (`metrics.port`): after
confluent-kafka produced and a group consumed, the figures match what the test did."""

from __future__ import annotations

import socket
import urllib.error
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from tests.broker_process import BrokerProcess, free_port

pytestmark = pytest.mark.interop
RECORDS = {"metrics-a": 120, "metrics-b": 30}
CONSUMED = 50


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    metrics_port = free_port()
    process = BrokerProcess(str(tmp_path_factory.mktemp("metrics") / "data"),
                            {"metrics.port": str(metrics_port), "metrics.host": "127.0.0.1",
                             "group.initial.rebalance.delay.ms": "0"})
    process.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    process.start()
    yield process
    process.stop()


def scrape(url: str) -> dict[tuple[str, tuple], float]:
    with urllib.request.urlopen(url, timeout=10) as response:
        assert response.headers["Content-Type"].startswith("text/plain")
        text = response.read().decode()
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def test_metrics_count_what_clients_did(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic(name, 1, 1) for name in RECORDS]).values():
        future.result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for topic, count in RECORDS.items():
        for i in range(count):
            producer.produce(topic, b"v" * 100, key=b"k%d" % i)
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "metrics-readers",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["metrics-a"])
    seen = []
    while len(seen) < CONSUMED:
        message = consumer.poll(10)
        assert message is not None and message.error() is None
        seen.append(message)
    consumer.commit(message=seen[-1], asynchronous=False)
    consumer.close()

    samples = scrape(broker.metrics_url)

    def value(name: str, **labels) -> float:
        return samples[(name, tuple(sorted(labels.items())))]

    for topic, count in RECORDS.items():
        assert value("kafka_server_brokertopicmetrics_messagesin_total", topic=topic) == count
        assert value("kafka_server_brokertopicmetrics_bytesin_total", topic=topic) == \
            value("kafka_log_log_size", topic=topic, partition="0")
        assert value("kafka_log_log_logendoffset", topic=topic, partition="0") == count
        assert value("kafka_cluster_partition_highwatermark", topic=topic, partition="0") == count
    assert value("kafka_server_brokertopicmetrics_bytesout_total", topic="metrics-a") > 0
    assert ("kafka_server_brokertopicmetrics_bytesout_total", (("topic", "metrics-b"),)) not in samples
    assert value("kafka_consumergroup_lag", consumergroup="metrics-readers", topic="metrics-a",
                 partition="0") == RECORDS["metrics-a"] - CONSUMED
    assert value("kafka_network_requestmetrics_requests_total", request="Produce") >= 1
    assert value("kafka_network_requestmetrics_totaltime_seconds_count", request="Fetch") >= 1
    assert value("kafka_server_replicamanager_underreplicatedpartitions") == 0
    assert value("kafka_controller_kafkacontroller_offlinepartitionscount") == 0
    assert value("kafka_controller_kafkacontroller_activecontrollercount") == 1
    assert value("kafka_server_socketservermetrics_connection_count") >= 1  # the admin and producer are still connected
    assert value("kafka_network_requestchannel_requestqueuesize") >= 0
    assert value("gregor_cluster_partitions", state="OnlinePartition") >= len(RECORDS)
    assert ("gregor_cluster_partitions", (("state", "OfflinePartition"),)) not in samples
    assert value("gregor_cluster_replicas", state="OnlineReplica") == value("gregor_cluster_partitions",
                                                                           state="OnlinePartition")
    assert value("kafka_server_replicamanager_isrshrinks_total") == 0


def test_other_paths_and_methods_are_refused(broker):
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(broker.metrics_url.replace("/metrics", "/nope"), timeout=10)
    assert missing.value.code == 404
    request = urllib.request.Request(broker.metrics_url, data=b"x", method="POST")
    with pytest.raises(urllib.error.HTTPError) as posted:
        urllib.request.urlopen(request, timeout=10)
    assert posted.value.code == 405


def listening_hosts(port: int) -> set[str]:
    """The local addresses of the sockets listening on `port` (Linux's /proc/net/tcp and tcp6,
    state 0A); an IPv6 address is left in the kernel's hex."""
    hosts = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as handle:
            for line in handle.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                address, _, hex_port = local.partition(":")
                if state == "0A" and int(hex_port, 16) == port:
                    hosts.add(socket.inet_ntoa(bytes.fromhex(address)[::-1]) if len(address) == 8 else address)
    return hosts


def test_the_endpoint_listens_on_the_listeners_host_by_default(tmp_path):
    metrics_port = free_port()
    process = BrokerProcess(str(tmp_path / "data"), {"metrics.port": str(metrics_port)})
    process.start()
    try:
        hosts = listening_hosts(metrics_port)
        assert scrape(f"http://127.0.0.1:{metrics_port}/metrics")
    finally:
        process.stop()
    assert hosts == {"127.0.0.1"}
    assert f"Prometheus metrics at http://127.0.0.1:{metrics_port}/metrics" in process.output()
