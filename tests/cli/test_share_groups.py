"""`gregor share-groups` (kafka-share-groups.sh) against a real broker, with a confluent-kafka
ShareConsumer as the member."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import ShareConsumer

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
    no_view = in_process(capsys, "share-groups", *bootstrap, "--describe", "--group", "g")
    assert no_view.returncode != 0 and "DescribeShareGroupOffsets" in one_error_line(no_view)
