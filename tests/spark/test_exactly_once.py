"""The exactly-once sink's task and driver steps without a Spark job (the job with a killed driver
is in test_exactly_once_job.py): a batch becomes visible only with the driver's commit; a re-run
of a committed batch writes nothing (its marker); a re-run of a batch whose commit never came
aborts the open transaction and writes it once; a stale attempt's handle cannot be committed.
Read back with librdkafka's read_committed consumer."""

from __future__ import annotations

import uuid

import pyarrow as pa
import pytest

from gregor.client import ProducerFencedError
from gregor.spark.errors import OptionError
from gregor.spark.exactly_once import commit_transactions, committed_marker, transactional_id, write_in_transaction
from gregor.spark.options import parse_sink_options
from gregor.spark.writer import TaskIdentity
from tests.spark.test_write import consume_all


def rows(*values: bytes) -> list[pa.RecordBatch]:
    return [pa.RecordBatch.from_pydict({"value": pa.array(values, pa.binary())})]


def committed_values(broker, topic: str, expected: int) -> list[bytes]:
    return [record["value"] for record in consume_all(broker, topic, expected, isolation="read_committed")]


def test_markers_make_reruns_write_each_batch_once(broker, new_topic):
    topic = new_topic(1)
    options = parse_sink_options({"kafka.bootstrap.servers": broker.bootstrap, "topic": topic,
                                  "deliveryGuarantee": "exactly-once",
                                  "transactionalIdPrefix": f"eos-{uuid.uuid4().hex[:6]}"})
    task = TaskIdentity(partition_id=0, attempt=0, query_id="q", batch_id=0)

    first = write_in_transaction(iter(rows(b"a", b"b")), options, task)
    assert first.handle is not None and first.records == 2
    assert committed_values(broker, topic, 0) == []  # open until the driver commits
    commit_transactions([first], options, 0)
    assert committed_values(broker, topic, 2) == [b"a", b"b"]
    txn_id = transactional_id(options, 0)
    assert committed_marker(options, txn_id, "q") == 0
    assert committed_marker(options, txn_id, "a-new-query-with-the-same-prefix") is None

    again = write_in_transaction(iter(rows(b"a", b"b")), options, task)  # batch 0 re-run after a crash
    assert again.handle is None and again.records == 0
    commit_transactions([again], options, 0)

    nxt = TaskIdentity(partition_id=0, attempt=0, query_id="q", batch_id=1)
    lost = write_in_transaction(iter(rows(b"c")), options, nxt)  # the driver dies before its commit
    rerun = write_in_transaction(iter(rows(b"c")), options, nxt)
    with pytest.raises(ProducerFencedError):
        commit_transactions([lost], options, 1)  # the re-run fenced that attempt
    commit_transactions([rerun], options, 1)
    assert committed_values(broker, topic, 3) == [b"a", b"b", b"c"]


@pytest.mark.parametrize("options, message", [
    ({"deliveryGuarantee": "exactly-once"}, "transactionalIdPrefix"),
    ({"deliveryGuarantee": "twice"}, "deliveryGuarantee"),
    ({"transactionalIdPrefix": "p"}, "only used with deliveryGuarantee=exactly-once"),
    ({"deliveryGuarantee": "exactly-once", "transactionalIdPrefix": "p", "topic": None}, "topic"),
    ({"deliveryGuarantee": "exactly-once", "transactionalIdPrefix": "p", "kafka.acks": "1"}, "acks"),
])
def test_exactly_once_options_are_checked(options, message):
    raw = {"kafka.bootstrap.servers": "h:1", "topic": "out", **options}
    raw = {key: value for key, value in raw.items() if value is not None}
    with pytest.raises(OptionError, match=message):
        parse_sink_options(raw)


def test_exactly_once_is_for_streaming_writes_only():
    with pytest.raises(OptionError, match="streaming writes"):
        parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "out", "deliveryGuarantee": "exactly-once",
                            "transactionalIdPrefix": "p"}, streaming=False)
