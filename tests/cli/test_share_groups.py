"""`gregor share-groups` (kafka-share-groups.sh) against a real broker, with a confluent-kafka
ShareConsumer as the member."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer

from tests.cli.conftest import gregor, in_process, one_error_line


@pytest.mark.slow
def test_list_and_describe_a_share_group(broker, bootstrap):
    topic, group = f"queue-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    assert gregor("topics", *bootstrap, "--create", "--topic", topic, "--partitions", "2").returncode == 0
    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "client.id": "worker-1"})
    consumer.subscribe([topic])
    try:
        deadline = time.monotonic() + 30
        while True:
            consumer.poll(0.2)
            members = gregor("share-groups", *bootstrap, "--describe", "--group", group, "--members")
            if members.returncode == 0 and f"{topic}:0,1" in members.stdout:
                break
            assert time.monotonic() < deadline, members.stdout + members.stderr
        lines = [line.split() for line in members.stdout.splitlines() if line.strip()]
        assert lines[0] == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]
        assert lines[1][0] == group and lines[1][3] == "worker-1" and lines[1][4:] == ["2", f"{topic}:0,1"]

        listed = gregor("share-groups", *bootstrap, "--list")
        assert listed.returncode == 0 and group in listed.stdout.split()
        with_state = gregor("share-groups", *bootstrap, "--list", "--state")
        assert [group, "Stable"] in [line.split() for line in with_state.stdout.splitlines()]
        state = gregor("share-groups", *bootstrap, "--describe", "--group", group, "--state")
        rows = [line.split() for line in state.stdout.splitlines() if line.strip()]
        assert rows[0] == ["GROUP", "COORDINATOR", "(ID)", "STATE", "#MEMBERS"]
        assert rows[1][0] == group and rows[1][-2:] == ["Stable", "1"]
        consumer_groups = gregor("consumer-groups", *bootstrap, "--list")
        assert group not in consumer_groups.stdout.split()
    finally:
        consumer.close()


def test_an_unknown_share_group_and_a_missing_view_are_one_line_errors(bootstrap, capsys):
    missing = gregor("share-groups", *bootstrap, "--describe", "--group", "no-such-share-group", "--members")
    assert missing.returncode != 0
    assert "Share group 'no-such-share-group' does not exist" in one_error_line(missing)
    offsets = gregor("share-groups", *bootstrap, "--describe", "--group", "no-such-share-group")
    assert offsets.returncode != 0 and "does not exist" in one_error_line(offsets)
    two_views = in_process(capsys, "share-groups", *bootstrap, "--describe", "--group", "g", "--members", "--state")
    assert two_views.returncode != 0 and "give one of --offsets, --members, --state" in one_error_line(two_views)
    no_scenario = in_process(capsys, "share-groups", *bootstrap, "--reset-offsets", "--group", "g", "--topic", "t")
    assert no_scenario.returncode != 0 and "exactly one of --to-earliest" in one_error_line(no_scenario)


def _rows(result) -> list[list[str]]:
    return [line.split() for line in result.stdout.splitlines() if line.strip()]


@pytest.mark.slow
def test_reset_describe_delete_offsets_and_delete_a_share_group(broker, bootstrap):
    topic, group = f"jobs-{uuid.uuid4().hex[:8]}", f"sg-{uuid.uuid4().hex[:8]}"
    assert gregor("topics", *bootstrap, "--create", "--topic", topic, "--partitions", "1").returncode == 0
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(6):
        producer.produce(topic, value=b"job-%d" % i, partition=0)
    assert producer.flush(15) == 0

    dry = gregor("share-groups", *bootstrap, "--reset-offsets", "--group", group, "--topic", topic, "--to-offset", "2")
    assert dry.returncode == 0 and _rows(dry)[1] == [group, topic, "0", "2"] and "nothing was changed" in dry.stderr
    done = gregor("share-groups", *bootstrap, "--reset-offsets", "--group", group, "--topic", topic, "--to-offset",
                  "2", "--execute")
    assert done.returncode == 0, done.stderr
    described = gregor("share-groups", *bootstrap, "--describe", "--group", group)
    assert "has no active members" in described.stdout
    rows = _rows(described)
    assert rows[1] == ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG"]
    assert rows[2] == [group, topic, "0", "0", "2", "4"]

    consumer = ShareConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    try:
        received: list[int] = []
        deadline = time.monotonic() + 30
        while len(received) < 4:
            assert time.monotonic() < deadline, received
            for message in consumer.poll(0.2):
                assert message.error() is None, message.error()
                received.append(message.offset())
                consumer.acknowledge(message, AcknowledgeType.ACCEPT)
        consumer.commit_sync()
        assert sorted(received) == [2, 3, 4, 5]  # the records before the reset start offset are done with
        active = gregor("share-groups", *bootstrap, "--reset-offsets", "--group", group, "--topic", topic,
                        "--to-earliest", "--execute")
        assert active.returncode != 0 and "is not empty" in one_error_line(active)
        caught_up = gregor("share-groups", *bootstrap, "--describe", "--group", group)
        assert [group, topic, "0", "0", "6", "0"] in _rows(caught_up)
    finally:
        consumer.close()

    empty_deadline = time.monotonic() + 30
    while True:
        earliest = gregor("share-groups", *bootstrap, "--reset-offsets", "--group", group, "--all-topics",
                          "--to-earliest", "--execute")
        if earliest.returncode == 0 or time.monotonic() > empty_deadline:
            break
        time.sleep(0.3)  # the member's leave may still be on its way
    assert earliest.returncode == 0, earliest.stderr
    assert [group, topic, "0", "0", "0", "6"] in _rows(gregor("share-groups", *bootstrap, "--describe",
                                                             "--group", group))
    deleted = gregor("share-groups", *bootstrap, "--delete-offsets", "--group", group, "--topic", topic)
    assert deleted.returncode == 0 and _rows(deleted)[1] == [topic, "Successful"], deleted.stderr
    assert topic not in gregor("share-groups", *bootstrap, "--describe", "--group", group).stdout
    gone = gregor("share-groups", *bootstrap, "--delete", "--group", group)
    assert gone.returncode == 0 and f"Deletion of requested share groups ('{group}') was successful." in gone.stdout
    assert group not in gregor("share-groups", *bootstrap, "--list").stdout.split()
