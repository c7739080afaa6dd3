"""The exactly-once sink in a real streaming job whose driver is killed (-9) while a micro-batch's
transactions are open, then restarted from its checkpoint: the output topic, read with
read_committed (librdkafka), holds every input record exactly once. The killed job runs in its
own process (its own JVM); the restart runs the same query in the tests' warm session."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid

import pytest

from gregor.client import AdminClient
from tests.spark.conftest import produce
from tests.spark.eos_copy_job import PER_TRIGGER, copy_query
from tests.spark.test_write import consume_all

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PARTITIONS, RECORDS = 2, 16


def open_transactions(bootstrap: str, prefix: str) -> list[str]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        found = admin.describe_transactions([f"{prefix}-{p}" for p in range(PARTITIONS)], timeout=10)
    finally:
        admin.close()
    return sorted(txn_id for txn_id, description in found.items()
                  if not isinstance(description, Exception) and description.state == "Ongoing")


def committed_batches(checkpoint: str) -> int:
    commits = os.path.join(checkpoint, "commits")
    return len([name for name in os.listdir(commits) if name.isdigit()]) if os.path.isdir(commits) else 0


def test_a_job_killed_with_open_transactions_restarts_and_writes_each_record_once(
        spark, broker, new_topic, producer, tmp_path):
    source, target = new_topic(PARTITIONS), new_topic(PARTITIONS)
    produce(producer, source, [{"value": f"v{i}".encode(), "key": f"k{i}".encode(), "partition": i % PARTITIONS}
                               for i in range(RECORDS)])
    prefix, checkpoint = f"copy-{uuid.uuid4().hex[:6]}", str(tmp_path / "checkpoint")
    job = subprocess.Popen([sys.executable, "-m", "tests.spark.eos_copy_job", broker.bootstrap, source, target,
                            checkpoint, prefix], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           start_new_session=True)
    open_at_kill: list[str] = []
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and job.poll() is None:
            if committed_batches(checkpoint) >= 1:
                open_at_kill = open_transactions(broker.bootstrap, prefix)
                if open_at_kill:
                    break
            time.sleep(0.05)
        assert job.poll() is None, "the job ended before it could be killed"
    finally:
        os.killpg(job.pid, signal.SIGKILL)  # the driver and its JVM: a crash, not a stop
        job.wait()
    assert open_at_kill, "no micro-batch had open transactions while the job ran"
    assert committed_batches(checkpoint) < RECORDS // PER_TRIGGER, "the job had finished everything"

    query = copy_query(spark, broker.bootstrap, source, target, checkpoint, prefix, available_now=True)
    query.awaitTermination(180)
    assert query.exception() is None

    found = consume_all(broker, target, RECORDS, isolation="read_committed")
    assert sorted(record["value"] for record in found) == sorted(f"v{i}".encode() for i in range(RECORDS))
    assert open_transactions(broker.bootstrap, prefix) == []
