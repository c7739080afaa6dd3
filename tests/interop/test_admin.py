"""Admin operations through confluent-kafka's AdminClient and consumer offset lookups."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.interop


def test_topics_configs_partitions_and_delete_records(broker):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import (
        AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic,
    )
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic("admin-t", 2, 1, config={"retention.ms": "3600000"})]).values():
        future.result()
    with pytest.raises(Exception) as exists:
        list(admin.create_topics([NewTopic("admin-t", 2, 1)]).values())[0].result()
    assert "TOPIC_ALREADY_EXISTS" in str(exists.value)
    with pytest.raises(Exception) as bad:
        list(admin.create_topics([NewTopic("bad-config", 1, 1, config={"retention.ms": "soon"})]).values())[0].result()
    assert "INVALID_CONFIG" in str(bad.value)
    resource = ConfigResource("topic", "admin-t")
    config = list(admin.describe_configs([resource]).values())[0].result()
    assert config["retention.ms"].value == "3600000"
    assert config["segment.bytes"].value == "1073741824"
    change = ConfigResource("topic", "admin-t", incremental_configs=[
        ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)])
    list(admin.incremental_alter_configs([change]).values())[0].result()
    assert list(admin.describe_configs([resource]).values())[0].result()["cleanup.policy"].value == "compact"
    list(admin.create_partitions([NewPartitions("admin-t", 4)]).values())[0].result()
    assert len(admin.list_topics(timeout=10).topics["admin-t"].partitions) == 4
    with pytest.raises(Exception) as shrink:
        list(admin.create_partitions([NewPartitions("admin-t", 3)]).values())[0].result()
    assert "INVALID_PARTITIONS" in str(shrink.value)

    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("admin-t", key=b"k%d" % i, value=b"v", partition=1,
                         timestamp=1_600_000_000_000 + i * 1000)
    producer.flush(10)
    refused = []
    producer.produce("admin-t", value=b"no key", partition=1, on_delivery=lambda error, _: refused.append(error))
    producer.flush(10)
    assert refused[0] is not None and refused[0].name() == "INVALID_RECORD"
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "a"})
    found = consumer.offsets_for_times([TopicPartition("admin-t", 1, 1_600_000_004_500)], timeout=10)
    assert found[0].offset == 5
    deleted = list(admin.delete_records([TopicPartition("admin-t", 1, 4)]).values())[0].result()
    assert deleted.low_watermark == 4
    assert consumer.get_watermark_offsets(TopicPartition("admin-t", 1), timeout=10) == (4, 10)
    consumer.close()
    cluster = admin.describe_cluster().result()
    assert [node.id for node in cluster.nodes] == [1]
    for future in admin.delete_topics(["admin-t"]).values():
        future.result()
    assert "admin-t" not in admin.list_topics(timeout=10).topics
