"""`gregor consumer-groups` and `gregor configs` through their command lines against a real broker."""

from __future__ import annotations

import uuid

import pytest
from confluent_kafka import Consumer as OracleConsumer
from confluent_kafka import Producer as OracleProducer

from tests.cli.conftest import gregor, in_process, one_error_line


def offsets_table(stdout: str) -> list[dict[str, str]]:
    """The rows of a consumer-groups table as dicts keyed by column name."""
    lines = [line for line in stdout.splitlines() if line.strip() and not line.startswith("Consumer group")]
    header = lines[0].split()
    return [dict(zip(header, line.split())) for line in lines[1:]]


@pytest.fixture
def produced(broker, bootstrap) -> str:
    """A two-partition topic holding 6 records in partition 0 and 4 in partition 1."""
    name = f"lag-{uuid.uuid4().hex[:8]}"
    assert gregor("topics", *bootstrap, "--create", "--topic", name, "--partitions", "2").returncode == 0
    producer = OracleProducer({"bootstrap.servers": broker.bootstrap})
    for index in range(10):
        producer.produce(name, value=b"v%d" % index, partition=0 if index < 6 else 1)
    producer.flush(10)
    return name


def test_describe_shows_the_lag_left_by_a_consumer(bootstrap, produced):
    group = f"g-{uuid.uuid4().hex[:8]}"
    consumed = gregor("console-consumer", *bootstrap, "--topic", produced, "--partition", "0", "--offset", "earliest",
                      "--group", group, "--max-messages", "4")
    assert consumed.returncode == 0, consumed.stderr

    described = gregor("consumer-groups", *bootstrap, "--describe", "--group", group)
    assert described.returncode == 0, described.stderr
    assert f"Consumer group '{group}' has no active members." in described.stdout
    rows = offsets_table(described.stdout)
    assert list(rows[0]) == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                             "CONSUMER-ID", "HOST", "CLIENT-ID"]
    assert [(r["TOPIC"], r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"]) for r in rows] == [
        (produced, "0", "4", "6", "2")]

    listed = gregor("consumer-groups", *bootstrap, "--list")
    assert group in listed.stdout.split()
    state = gregor("consumer-groups", *bootstrap, "--describe", "--group", group, "--state")
    assert state.stdout.split()[-2:] == ["Empty", "0"]


def test_reset_offsets_moves_a_real_group(broker, bootstrap, produced):
    group = f"reset-{uuid.uuid4().hex[:8]}"
    base = ["consumer-groups", *bootstrap, "--reset-offsets", "--group", group, "--topic", produced]
    dry = gregor(*base, "--to-latest", "--dry-run")
    assert [(r["PARTITION"], r["NEW-OFFSET"]) for r in offsets_table(dry.stdout)] == [("0", "6"), ("1", "4")]
    assert gregor("consumer-groups", *bootstrap, "--describe", "--group", group).returncode == 1  # nothing committed

    assert gregor(*base, "--to-latest", "--execute").returncode == 0
    shifted = gregor("consumer-groups", *bootstrap, "--reset-offsets", "--group", group, "--topic", f"{produced}:0",
                     "--shift-by", "-5", "--execute")
    assert [r["NEW-OFFSET"] for r in offsets_table(shifted.stdout)] == ["1"]
    clamped = gregor(*base, "--to-offset", "100", "--dry-run")
    assert [r["NEW-OFFSET"] for r in offsets_table(clamped.stdout)] == ["6", "4"]
    exported = gregor(*base, "--to-datetime", "2000-01-01T00:00:00.000Z", "--export")
    assert exported.stdout.splitlines() == ["topic,partition,offset", f"{produced},0,0", f"{produced},1,0"]

    oracle = OracleConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False})
    committed = oracle.committed([_tp(produced, 0), _tp(produced, 1)], timeout=10)
    assert [tp.offset for tp in committed] == [1, 4]

    oracle.subscribe([produced])
    for _ in range(60):
        oracle.poll(0.5)
        if oracle.assignment():
            break
    try:
        refused = gregor(*base, "--to-earliest", "--execute")
        assert refused.returncode == 1
        assert "can only be reset if the group" in one_error_line(refused)
        members = gregor("consumer-groups", *bootstrap, "--describe", "--group", group, "--members", "--verbose")
        rows = offsets_table(members.stdout)
        assert len(rows) == 1 and rows[0]["#PARTITIONS"] == "2"
        # a classic group: no epochs nor target, as Kafka 4's tool shows it
        assert (rows[0]["CURRENT-EPOCH"], rows[0]["CURRENT-ASSIGNMENT"], rows[0]["TARGET-EPOCH"],
                rows[0]["TARGET-ASSIGNMENT"]) == ("-", f"{produced}:0,1", "-", "-")
    finally:
        oracle.close()

    assert gregor("consumer-groups", *bootstrap, "--delete-offsets", "--group", group,
                  "--topic", f"{produced}:1").returncode == 0
    deleted = gregor("consumer-groups", *bootstrap, "--delete", "--group", group)
    assert deleted.returncode == 0, deleted.stderr
    assert group not in gregor("consumer-groups", *bootstrap, "--list").stdout.split()


def _tp(topic: str, partition: int):
    from confluent_kafka import TopicPartition

    return TopicPartition(topic, partition)


def test_configs_describe_alter_delete(bootstrap, produced):
    altered = gregor("configs", *bootstrap, "--alter", "--entity-type", "topics", "--entity-name", produced,
                     "--add-config", "retention.ms=5000,cleanup.policy=[compact,delete]")
    assert altered.returncode == 0, altered.stderr
    assert altered.stdout.strip() == f"Completed updating config for topic {produced}."
    described = gregor("configs", *bootstrap, "--describe", "--topic", produced)
    assert described.stdout.splitlines()[0] == f"Dynamic configs for topic {produced} are:"
    assert "  retention.ms=5000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=5000" in described.stdout
    assert "cleanup.policy=compact,delete " in described.stdout
    removed = gregor("configs", *bootstrap, "--alter", "--topic", produced, "--delete-config", "retention.ms")
    assert removed.returncode == 0, removed.stderr
    assert "retention.ms" not in gregor("configs", *bootstrap, "--describe", "--topic", produced).stdout

    broker = gregor("configs", *bootstrap, "--alter", "--broker", "1", "--add-config", "log.retention.ms=7200000")
    assert broker.returncode == 0, broker.stderr
    assert "log.retention.ms=7200000" in gregor("configs", *bootstrap, "--describe", "--broker", "1").stdout
    absent = gregor("configs", *bootstrap, "--describe", "--broker", "7")
    assert absent.returncode == 1
    assert "node 7 is not in the cluster (its brokers: 1)" in one_error_line(absent)

    unknown = gregor("configs", *bootstrap, "--alter", "--topic", produced, "--add-config", "no.such.key=1")
    assert unknown.returncode == 1
    assert "no.such.key" in one_error_line(unknown)


@pytest.mark.parametrize("tool, args, message", [
    ("consumer-groups", [], "give exactly one of --list"),
    ("consumer-groups", ["--describe"], "--describe needs --group"),
    ("consumer-groups", ["--reset-offsets", "--group", "g", "--all-topics"], "needs exactly one of --to-earliest"),
    ("consumer-groups", ["--reset-offsets", "--group", "g", "--to-earliest"], "--topic"),
    ("consumer-groups", ["--reset-offsets", "--group", "g", "--all-topics", "--to-latest", "--dry-run",
                         "--execute"], "--dry-run or --execute"),
    ("consumer-groups", ["--describe", "--group", "g", "--to-earliest"], "work with --reset-offsets only"),
    ("configs", ["--describe"], "name the entity"),
    ("configs", ["--alter", "--topic", "t"], "--alter needs --add-config"),
    ("configs", ["--alter", "--topic", "t", "--add-config", "a=[b"], "unbalanced brackets"),
    ("configs", ["--describe", "--entity-type", "brokers", "--entity-name", "one"], "broker is its id"),
])
def test_wrong_arguments(capsys, tool, args, message):
    result = in_process(capsys, tool, "--bootstrap-server", "127.0.0.1:9", *args)
    assert result.returncode == 2
    assert message in one_error_line(result)


def test_unreachable_broker(unreachable):
    for tool, args in (("consumer-groups", ["--list"]), ("configs", ["--describe", "--topic", "t"])):
        result = gregor(tool, *unreachable, *args, "--timeout", "1500")
        assert result.returncode == 1
        assert "cannot reach the cluster" in one_error_line(result)


def test_a_consumer_protocol_group_shows_its_type_epochs_and_assignments(broker, bootstrap, produced, capsys):
    group = f"kip848-{uuid.uuid4().hex[:8]}"
    member = OracleConsumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "group.protocol": "consumer",
                             "auto.offset.reset": "earliest", "enable.auto.commit": False})
    member.subscribe([produced])
    consumed = 0
    for _ in range(100):
        consumed += len([m for m in member.consume(10, 0.1) if m.error() is None])
        if len(member.assignment()) == 2 and consumed >= 10:
            break
    try:
        listed = gregor("consumer-groups", *bootstrap, "--list", "--type", "consumer", "--state")
        assert listed.returncode == 0, listed.stderr
        assert {"GROUP": group, "TYPE": "consumer", "STATE": "Stable"} in offsets_table(listed.stdout)
        state = gregor("consumer-groups", *bootstrap, "--describe", "--group", group, "--state", "--verbose")
        (row,) = offsets_table(state.stdout)
        assert (row["TYPE"], row["STATE"], row["ASSIGNMENT-STRATEGY"]) == ("consumer", "Stable", "uniform")
        assert row["GROUP-EPOCH"] == row["TARGET-ASSIGNMENT-EPOCH"] == "1"
        members = gregor("consumer-groups", *bootstrap, "--describe", "--group", group, "--members", "--verbose")
        (row,) = offsets_table(members.stdout)
        assert "GROUP-INSTANCE-ID" not in row, "Kafka 4 shows it only when a member has one"
        assert (row["CURRENT-EPOCH"], row["TARGET-EPOCH"]) == ("1", "1")
        assert row["CURRENT-ASSIGNMENT"] == row["TARGET-ASSIGNMENT"] == f"{produced}:0,1"
        member.commit(asynchronous=False)
        offsets = in_process(capsys, "consumer-groups", *bootstrap, "--describe", "--group", group, "--offsets",
                             "--verbose")
        rows = offsets_table(offsets.stdout)
        assert [(r["PARTITION"], r["LEADER-EPOCH"], r["CURRENT-OFFSET"]) for r in rows] == [
            ("0", "0", "6"), ("1", "0", "4")]
    finally:
        member.close()
    assert one_error_line(gregor("consumer-groups", *bootstrap, "--list", "--type", "bogus")).endswith(
        "unknown group type 'bogus'; known: classic, consumer")
