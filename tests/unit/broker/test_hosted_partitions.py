"""The broker's PartitionHost (HostedPartitions), MetadataView (BrokerMetadata) and the publisher
that applies committed images to them, driven directly (`hosted_node.Node`)."""

from __future__ import annotations

import asyncio
import os
import uuid

from gregor.broker.broker_metadata import log_config
from gregor.metadata.image import TOPIC_RESOURCE
from gregor.protocol.messages import ConfigRecord, PartitionChangeRecord, RemoveTopicRecord
from gregor.replication.fetch_sessions import SessionWakeKey
from gregor.storage.log import Log, LogConfig

from tests.unit.broker.hosted_node import A, Node, broker_record
from tests.unit.storage.helpers import batch


def test_the_first_image_hosts_this_brokers_replicas_and_deletes_the_logs_it_no_longer_names(tmp_path):
    async def run() -> None:
        node = Node(tmp_path)
        Log(os.path.join(node.log_dir, "gone-0"), LogConfig(), 0).close()  # a topic deleted while it was down
        node.start()
        assert node.hosted() == {("a", 0): "leader", ("a", 1): "follower of 2"}
        assert node.on_disk() == {"a-0", "a-1"}
        assert node.groups.calls == [("sync_leadership",)]
        assert node.partitions.partition("a", 1) is node.partitions.partitions[("a", 1)]
        assert node.partitions.partition("b", 0) is None
        assert set(node.partitions.logs_in(node.log_dir)) == {("a", 0), ("a", 1)}
        await node.partitions.close()
    asyncio.run(run())


def test_a_leader_change_answers_every_fetch_parked_on_the_partition(tmp_path):
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        far = node.partitions.consumer_fetches.now_ms() + 60_000
        consumer = node.partitions.consumer_fetches.park([("a", 0)], far)
        follower = node.partitions.replica_fetches.park([("a", 0)], far)
        elsewhere = node.partitions.consumer_fetches.park([("a", 1)], far)
        node.publish(PartitionChangeRecord(partition_id=0, topic_id=A, leader=2, replicas=[1, 2], isr=[1, 2]))
        assert node.hosted()[("a", 0)] == "follower of 2"
        await asyncio.sleep(0)  # the fetches a change made due are answered in the next loop iteration
        assert consumer.done() and follower.done() and not elsewhere.done()
        assert node.groups.calls[-1] == ("sync_leadership",)
        await node.partitions.close()
    asyncio.run(run())


def test_a_deleted_topic_stops_its_partitions_deletes_their_logs_and_forgets_its_offsets(tmp_path):
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        parked = node.partitions.consumer_fetches.park([("a", 1)], node.partitions.consumer_fetches.now_ms() + 60_000)
        node.publish(RemoveTopicRecord(topic_id=A))
        await asyncio.sleep(0)
        assert node.hosted() == {} and node.on_disk() == set() and parked.done()
        assert node.groups.calls[1:] == [("forget", [("a", 0), ("a", 1)]), ("sync_leadership",)]
        await node.partitions.close()
    asyncio.run(run())


def test_a_partition_reassigned_away_is_stopped_and_its_log_deleted(tmp_path):
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        node.publish(PartitionChangeRecord(partition_id=1, topic_id=A, replicas=[2], isr=[2]))
        assert node.hosted() == {("a", 0): "leader"} and node.on_disk() == {"a-0"}
        await node.partitions.close()
    asyncio.run(run())


def test_topic_config_changes_reach_the_topics_logs_only(tmp_path):
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        node.publish(ConfigRecord(resource_type=TOPIC_RESOURCE, resource_name="a", name="retention.ms", value="5000"))
        assert all(p.log.config.retention_ms == 5000 for p in node.partitions.partitions.values())
        assert log_config(node.metadata, "b").retention_ms == log_config(node.metadata, None).retention_ms != 5000
        await node.partitions.close()
    asyncio.run(run())


def test_an_append_wakes_followers_fetches_and_a_high_watermark_move_consumers(tmp_path):
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        host = node.partitions
        far = host.consumer_fetches.now_ms() + 60_000
        leader = host.partition("a", 0)
        consumer = host.consumer_fetches.park([("a", 0)], far)
        follower = host.replica_fetches.park([("a", 0)], far)
        leader.append_as_leader(batch(1), 0)  # one replica: the high watermark follows the append
        assert not consumer.done(), "served when the step that made it due ends"
        host.answer_due_fetches()  # the dispatcher's step end
        assert consumer.done() and not follower.done()
        host.on_leader_append(leader)
        host.answer_due_fetches()
        assert not follower.done(), "no follower to wake: the partition has one replica"
        node.publish(PartitionChangeRecord(partition_id=0, topic_id=A, replicas=[1, 2], isr=[1]))
        follower = host.replica_fetches.park([("a", 0)], far)
        host.on_leader_append(leader)
        host.answer_due_fetches()
        assert follower.done()
        await host.close()
    asyncio.run(run())



def test_a_step_end_serves_the_followers_fetches_first_then_consumers_until_none_is_due(tmp_path):
    """A follower's fetch is on the path of every acks=all produce: served before consumers'; one
    whose serving makes a consumer's fetch due (its effects moved a high watermark) leaves none
    behind for a later iteration."""
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        host = node.partitions
        far = host.consumer_fetches.now_ms() + 60_000
        served: list[str] = []
        host.consumer_fetches.park_callback([("a", 0)], far, lambda: served.append("consumer"))
        host.replica_fetches.park_callback([("a", 0)], far, lambda: served.append("follower"))
        host.consumer_fetches.park_callback([("a", 1)], far, lambda: served.append("consumer of a-1"))

        def follower_moving_a_high_watermark() -> None:
            served.append("follower of a-1")
            host.consumer_fetches.check(("a", 1))

        host.replica_fetches.park_callback([("a", 1)], far, follower_moving_a_high_watermark)
        host.consumer_fetches.check(("a", 0))
        host.replica_fetches.check(("a", 0))
        host.replica_fetches.check(("a", 1))
        host.answer_due_fetches()
        assert served == ["follower", "follower of a-1", "consumer", "consumer of a-1"]
        await host.close()
    asyncio.run(run())


def test_an_append_or_a_leader_change_wakes_the_follower_fetches_parked_in_sessions_the_partition_rested_in(tmp_path):
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        host = node.partitions
        far = host.replica_fetches.now_ms() + 60_000
        node.publish(PartitionChangeRecord(partition_id=0, topic_id=A, replicas=[1, 2], isr=[1, 2]))
        leader = host.partition("a", 0)
        served: list[str] = []
        for number, event in enumerate(("appended", "new leader")):
            key = SessionWakeKey(number)
            host.replica_fetches.park_callback([key], far, lambda event=event: served.append(event))
            leader.rest(2, lambda key=key: key)
            if event == "appended":
                leader.append_as_leader(batch(1), 0)
                host.on_leader_append(leader)
            else:
                node.publish(PartitionChangeRecord(partition_id=0, topic_id=A, leader=2, replicas=[1, 2], isr=[1, 2]))
            host.answer_due_fetches()
            assert served == [event]
            served.clear()
        await host.close()
    asyncio.run(run())

def test_the_metadata_view_answers_from_the_current_image(tmp_path):
    async def run() -> None:
        node = Node(tmp_path)
        node.start()
        view = node.metadata
        assert view.topic_name(A) == "a" and view.topic_name(uuid.UUID(int=99)) is None
        assert [(broker_id, e.host, e.port) for broker_id, e in view.endpoints_for("PLAINTEXT")] == [
            (1, "h1", 9001), (2, "h2", 9002)]
        node.publish(broker_record(3, listener="OTHER"))  # registered fenced
        assert [broker_id for broker_id, _ in view.endpoints_for("PLAINTEXT")] == [1, 2]
        assert view.replica_endpoint(2) == ("h2", 9002) and view.replica_endpoint(3) is None
        assert view.broker_epoch == -1, "not registered yet"
        assert view.is_valid_topic_name("ok.name") and not view.is_valid_topic_name("no/slash")
        await node.partitions.close()
    asyncio.run(run())
