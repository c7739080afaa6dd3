"""GROUP config resources (KIP-848 GroupConfig) through kafka-python's admin client and
`gregor configs --entity-type groups`, as kafka-configs.sh."""

from __future__ import annotations

import time
import uuid

from confluent_kafka import Producer, ShareConsumer
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from tests.cli.conftest import gregor, in_process, one_error_line


def test_kafka_python_sets_and_describes_a_groups_config(broker):
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        done = admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, "configured",
                                                   configs={"consumer.session.timeout.ms": "50000"})])
        assert done == {"group": {"configured": "OK"}}
        refused = admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, "configured",
                                                      configs={"consumer.heartbeat.interval.ms": "100"})])
        assert "consumer.heartbeat.interval.ms must be greater than or equal to " \
               "group.consumer.min.heartbeat.interval.ms" in refused["group"]["configured"]
        described = admin.describe_configs([ConfigResource(ConfigResourceType.GROUP, "configured")])
        entry = described["group"]["configured"]["consumer.session.timeout.ms"]
        assert (entry["value"], entry["config_source"]) == ("50000", "DYNAMIC_GROUP_CONFIG")
    finally:
        admin.close()


def test_the_configs_tool_alters_describes_and_deletes_group_configs(bootstrap, capsys):
    """One run as a process (the console script's path), the rest in process to keep it quick."""
    group = ["--entity-type", "groups", "--entity-name", "tooled"]
    done = gregor("configs", *bootstrap, "--alter", *group, "--add-config",
                  "consumer.session.timeout.ms=55000,consumer.heartbeat.interval.ms=6000")
    assert (done.returncode, done.stdout) == (0, "Completed updating config for group tooled.\n"), done.stderr
    shown = in_process(capsys, "configs", *bootstrap, "--describe", "--group", "tooled")
    assert shown.stdout.splitlines() == [
        "Dynamic configs for group tooled are:",
        "  consumer.heartbeat.interval.ms=6000 sensitive=false synonyms={GROUP_CONFIG:consumer.heartbeat.interval.ms=6000}",
        "  consumer.session.timeout.ms=55000 sensitive=false synonyms={GROUP_CONFIG:consumer.session.timeout.ms=55000}",
    ]
    assert in_process(capsys, "configs", *bootstrap, "--alter", *group, "--delete-config",
                  "consumer.heartbeat.interval.ms").returncode == 0
    every = in_process(capsys, "configs", *bootstrap, "--describe", *group, "--all").stdout
    assert "consumer.heartbeat.interval.ms=5000 sensitive=false synonyms={DEFAULT_CONFIG:" in every
    bad = in_process(capsys, "configs", *bootstrap, "--alter", *group, "--add-config", "consumer.rebalance.ms=1")
    assert bad.returncode != 0
    assert "Unknown group config name: consumer.rebalance.ms" in one_error_line(bad)


def test_a_share_groups_auto_offset_reset_is_its_own(broker):
    """The broker starts share groups at the latest offset; a group configured with
    `share.auto.offset.reset=earliest` gets the records produced before it joined."""
    topic, group = f"shared-{uuid.uuid4().hex[:8]}", f"early-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
        assert admin.alter_configs([ConfigResource(ConfigResourceType.GROUP, group, configs={
            "share.auto.offset.reset": "earliest"})]) == {"group": {group: "OK"}}
    finally:
        admin.close()
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for index in range(5):
        producer.produce(topic, value=b"%d" % index)
    assert producer.flush(10) == 0
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    consumer.subscribe([topic])
    try:
        received: list[int] = []
        deadline = time.monotonic() + 30
        while len(received) < 5:
            assert time.monotonic() < deadline, f"received {received}"
            received += [message.offset() for message in consumer.poll(0.2) if message.error() is None]
        assert sorted(received) == [0, 1, 2, 3, 4]
        every_group = gregor("configs", "--bootstrap-server", broker.bootstrap, "--describe", "--entity-type", "groups")
        assert f"Dynamic configs for group {group} are:\n  share.auto.offset.reset=earliest" in every_group.stdout
    finally:
        consumer.close()
