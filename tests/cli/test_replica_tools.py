"""leader-election, reassign-partitions, get-offsets, delete-records and log-dirs against one
3-broker cluster (module scope), with confluent-kafka and kafka-python as the independent
writer and reader of what the tools change."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from confluent_kafka import Producer as OracleProducer
from kafka.admin import KafkaAdminClient

from tests.cli.conftest import in_process, one_error_line
from tests.cluster.brokers import Cluster

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    running = Cluster(tmp_path_factory.mktemp("replica-tools")).start()
    yield running
    running.stop()


@pytest.fixture
def bootstrap(cluster) -> list[str]:
    return ["--bootstrap-server", cluster.bootstrap]


def new_topic(cluster: Cluster, partitions: int, replication_factor: int = 3, records: int = 0) -> str:
    name = f"tools-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(name, partitions, replication_factor)
    if records:
        producer = OracleProducer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 0})
        for index in range(records):
            producer.produce(name, value=b"record-%d" % index, partition=index % partitions)
        assert producer.flush(30) == 0
    return name


def write_json(tmp_path, document) -> str:
    path = tmp_path / f"{uuid.uuid4().hex[:8]}.json"
    path.write_text(json.dumps(document))
    return str(path)


def plan(topic: str, moves: dict[int, list[int]]) -> dict:
    return {"version": 1, "partitions": [{"topic": topic, "partition": partition, "replicas": replicas,
                                          "log_dirs": ["any"] * len(replicas)}
                                         for partition, replicas in moves.items()]}


def wait_until(condition, timeout: float = 30, what: str = "condition"):
    deadline = time.monotonic() + timeout
    while not (found := condition()):
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout}s")
        time.sleep(0.2)
    return found


# ---- reassign-partitions and leader-election ----

def test_reordering_replicas_then_a_preferred_election_moves_the_leader(capsys, cluster, bootstrap, tmp_path):
    topic = new_topic(cluster, 1)
    leader, replicas, _ = cluster.partitions(topic)[0]
    assert leader == replicas[0]
    reordered = replicas[1:] + replicas[:1]
    plan_file = write_json(tmp_path, plan(topic, {0: reordered}))

    executed = in_process(capsys, "reassign-partitions", *bootstrap, "--execute", "--reassignment-json-file", plan_file)
    assert executed.returncode == 0, executed.stderr
    assert executed.stdout.splitlines() == [
        "Current partition replica assignment", "",
        json.dumps(plan(topic, {0: replicas}), separators=(",", ":")), "",
        "Save this to use as the --reassignment-json-file option during rollback",
        f"Successfully started partition reassignment for {topic}-0"]
    cluster.wait_for(topic, lambda states: states[0][1] == reordered)
    verified = in_process(capsys, "reassign-partitions", *bootstrap, "--verify", "--reassignment-json-file", plan_file)
    assert verified.stdout.splitlines() == ["Status of partition reassignment:",
                                            f"Reassignment of partition {topic}-0 is completed."]

    elected = in_process(capsys, "leader-election", *bootstrap, "--election-type", "PREFERRED",
                         "--topic", topic, "--partition", "0")
    assert elected.returncode == 0, elected.stderr
    assert elected.stdout == f"Successfully completed leader election (PREFERRED) for partitions {topic}-0\n"
    cluster.wait_for(topic, lambda states: states[0][0] == reordered[0])
    again = in_process(capsys, "leader-election", *bootstrap, "--election-type", "preferred",
                       "--path-to-json-file", write_json(tmp_path, {"partitions": [{"topic": topic, "partition": 0}]}))
    assert again.returncode == 0, again.stderr
    assert again.stdout == f"Valid replica already elected for partitions {topic}-0\n"


def test_a_move_to_other_brokers_completes_and_verify_says_so(capsys, cluster, bootstrap, tmp_path):
    topic = new_topic(cluster, 2, replication_factor=2, records=20)
    states = cluster.partitions(topic)
    brokers = sorted(cluster.brokers)
    target = [broker for broker in brokers if broker not in states[0][1]] + [states[0][1][0]]
    plan_file = write_json(tmp_path, plan(topic, {0: target}))
    executed = in_process(capsys, "reassign-partitions", *bootstrap, "--execute", "--reassignment-json-file", plan_file)
    assert executed.returncode == 0, executed.stderr

    def completed() -> bool:
        verified = in_process(capsys, "reassign-partitions", *bootstrap, "--verify",
                              "--reassignment-json-file", plan_file)
        assert verified.returncode == 0, verified.stderr
        # "no active reassignment, but ..." while the broker's metadata lags the controller's
        return verified.stdout.splitlines()[1] == f"Reassignment of partition {topic}-0 is completed."

    wait_until(completed, what="completed reassignment")
    assert sorted(cluster.wait_for_full_isr(topic, 2)[0][1]) == sorted(target)
    assert in_process(capsys, "reassign-partitions", *bootstrap, "--list").stdout == "No partition reassignments found.\n"
    cancelled = in_process(capsys, "reassign-partitions", *bootstrap, "--cancel", "--reassignment-json-file", plan_file)
    assert cancelled.stdout == "None of the specified partition reassignments are active.\n"
    offsets = in_process(capsys, "get-offsets", *bootstrap, "--topic", topic, "--partitions", "0")
    assert offsets.stdout == f"{topic}:0:10\n"


def test_generate_proposes_a_placement_over_the_broker_list(capsys, cluster, bootstrap, tmp_path):
    topic = new_topic(cluster, 4, replication_factor=2)
    brokers = sorted(cluster.brokers)[:2]
    topics_file = write_json(tmp_path, {"topics": [{"topic": topic}], "version": 1})
    result = in_process(capsys, "reassign-partitions", *bootstrap, "--generate", "--topics-to-move-json-file",
                        topics_file, "--broker-list", ",".join(map(str, brokers)))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "Current partition replica assignment"
    assert lines[3] == "Proposed partition reassignment configuration"
    current = {(p["topic"], p["partition"]): p["replicas"] for p in json.loads(lines[1])["partitions"]}
    assert current == {(topic, index): state[1] for index, state in cluster.partitions(topic).items()}
    proposed = json.loads(lines[4])
    assert proposed["version"] == 1
    assert [p["partition"] for p in proposed["partitions"]] == [0, 1, 2, 3]
    for partition in proposed["partitions"]:
        assert sorted(partition["replicas"]) == brokers and partition["log_dirs"] == ["any", "any"]
    leaders = [partition["replicas"][0] for partition in proposed["partitions"]]
    assert sorted(leaders) == sorted(brokers * 2)


def test_reassignment_refusals(capsys, cluster, bootstrap, tmp_path):
    topic = new_topic(cluster, 1, replication_factor=2)
    unknown_broker = in_process(capsys, "reassign-partitions", *bootstrap, "--execute", "--reassignment-json-file",
                                write_json(tmp_path, plan(topic, {0: [min(cluster.brokers), 77]})))
    assert unknown_broker.returncode == 1
    assert "Unknown broker id(s): 77" in one_error_line(unknown_broker)
    unknown_partition = in_process(capsys, "reassign-partitions", *bootstrap, "--verify", "--reassignment-json-file",
                                   write_json(tmp_path, plan(topic, {5: [2, 3]})))
    assert unknown_partition.returncode == 1
    assert f"Unable to find partition: {topic}-5" in one_error_line(unknown_partition)
    unknown_topic = in_process(capsys, "reassign-partitions", *bootstrap, "--generate", "--broker-list", "2,3",
                               "--topics-to-move-json-file",
                               write_json(tmp_path, {"topics": [{"topic": "no-such-topic"}], "version": 1}))
    assert unknown_topic.returncode == 1
    assert "no-such-topic" in one_error_line(unknown_topic)
    too_few = in_process(capsys, "reassign-partitions", *bootstrap, "--generate", "--broker-list", "2",
                         "--topics-to-move-json-file", write_json(tmp_path, {"topics": [{"topic": topic}]}))
    assert "Replication factor: 2 larger than available brokers: 1." in one_error_line(too_few)


def test_unclean_election_of_a_led_partition_is_not_needed(capsys, cluster, bootstrap):
    topic = new_topic(cluster, 2)
    result = in_process(capsys, "leader-election", *bootstrap, "--election-type", "UNCLEAN",
                        "--topic", topic, "--partition", "1")
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"Valid replica already elected for partitions {topic}-1\n"


def test_election_of_an_unknown_partition_fails(capsys, cluster, bootstrap):
    result = in_process(capsys, "leader-election", *bootstrap, "--election-type", "PREFERRED",
                        "--topic", "no-such-topic", "--partition", "0")
    assert result.returncode == 1
    assert result.stdout.startswith("Error completing leader election (PREFERRED) for partition: no-such-topic-0: "
                                    "UNKNOWN_TOPIC_OR_PARTITION")
    assert one_error_line(result) == "gregor leader-election: error: 1 replica(s) could not be elected"


# ---- get-offsets and delete-records ----

def test_offsets_at_each_time_and_after_deleting_records(capsys, cluster, bootstrap, tmp_path):
    topic = new_topic(cluster, 2, records=10)
    latest = in_process(capsys, "get-offsets", *bootstrap, "--topic", topic)
    assert latest.stdout == f"{topic}:0:5\n{topic}:1:5\n"
    assert in_process(capsys, "get-offsets", *bootstrap, "--topic", topic, "--time", "-2").stdout == \
        f"{topic}:0:0\n{topic}:1:0\n"
    assert in_process(capsys, "get-offsets", *bootstrap, "--topic", topic, "--time", "max-timestamp",
                      "--partitions", "1").stdout.startswith(f"{topic}:1:")
    assert in_process(capsys, "get-offsets", *bootstrap, "--topic", topic, "--time",
                      str(int(time.time() * 1000) + 3_600_000)).stdout == ""

    offsets = write_json(tmp_path, {"partitions": [{"topic": topic, "partition": 0, "offset": 3},
                                                   {"topic": topic, "partition": 1, "offset": -1}], "version": 1})
    deleted = in_process(capsys, "delete-records", *bootstrap, "--offset-json-file", offsets)
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.splitlines() == ["Executing records delete operation", "Records delete operation completed:",
                                           f"partition: {topic}-0\tlow_watermark: 3",
                                           f"partition: {topic}-1\tlow_watermark: 5"]
    assert in_process(capsys, "get-offsets", *bootstrap, "--topic", topic, "--time", "earliest").stdout == \
        f"{topic}:0:3\n{topic}:1:5\n"


def test_deleting_past_the_end_reports_the_partition_error(capsys, cluster, bootstrap, tmp_path):
    topic = new_topic(cluster, 1, records=2)
    offsets = write_json(tmp_path, {"partitions": [{"topic": topic, "partition": 0, "offset": 50}], "version": 1})
    result = in_process(capsys, "delete-records", *bootstrap, "--offset-json-file", offsets)
    assert result.returncode == 1
    assert result.stdout.splitlines()[2].startswith(f"partition: {topic}-0\terror: OFFSET_OUT_OF_RANGE")
    assert one_error_line(result) == "gregor delete-records: error: the records of 1 partition(s) could not be deleted"


def test_get_offsets_of_an_unknown_topic(capsys, bootstrap):
    result = in_process(capsys, "get-offsets", *bootstrap, "--topic", "no-such-topic")
    assert result.returncode == 1
    assert "Could not match any topic-partitions with the specified filters" in one_error_line(result)


# ---- log-dirs ----

def test_log_dirs_match_what_kafka_python_reads(capsys, cluster, bootstrap):
    topic = new_topic(cluster, 2, records=30)
    result = in_process(capsys, "log-dirs", *bootstrap, "--describe", "--topic-list", topic)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    brokers = sorted(cluster.brokers)
    assert lines[:2] == ["Querying brokers for log directories information",
                         f"Received log directory information from brokers {','.join(map(str, brokers))}"]
    document = json.loads(lines[2])
    assert document["version"] == 1 and [b["broker"] for b in document["brokers"]] == brokers

    oracle = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        expected = {entry["broker"]: {d["log_dir"]: {f"{t['name']}-{p['partition_index']}": p["partition_size"]
                                                     for t in d["topics"] if t["name"] == topic
                                                     for p in t["partitions"]}
                                      for d in entry["log_dirs"]}
                    for entry in oracle.describe_log_dirs()}
        filtered = oracle.describe_log_dirs({topic: [1]})
    finally:
        oracle.close()
    assert {(entry["broker"], t["name"], p["partition_index"]) for entry in filtered for d in entry["log_dirs"]
            for t in d["topics"] for p in t["partitions"]} == {(broker, topic, 1) for broker in brokers}
    printed = {b["broker"]: {d["logDir"]: {p["partition"]: p["size"] for p in d["partitions"]} for d in b["logDirs"]}
               for b in document["brokers"]}
    assert printed == expected
    for broker in document["brokers"]:
        (log_dir,) = broker["logDirs"]
        assert log_dir["logDir"] == cluster.brokers[broker["broker"]].data_dir and log_dir["error"] is None
        assert [p["partition"] for p in log_dir["partitions"]] == [f"{topic}-0", f"{topic}-1"]
        assert all(p["size"] > 0 and p["offsetLag"] == 0 and p["isFuture"] is False for p in log_dir["partitions"])


def test_log_dirs_of_an_unknown_broker(capsys, cluster, bootstrap):
    result = in_process(capsys, "log-dirs", *bootstrap, "--describe", "--broker-list", "2,99")
    assert result.returncode == 1
    assert "The given brokers do not exist from --broker-list: 99." in one_error_line(result)
