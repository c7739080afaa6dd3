"""The transaction coordinator's metrics and transactional.id.expiration.ms on a real broker:
confluent-kafka's transactional producer commits twice and aborts once; the Prometheus endpoint
counts them and the transactions per state; once the id has been idle past its expiration it is
gone (DescribeTransactions: TRANSACTIONAL_ID_NOT_FOUND) and counted as expired."""

from __future__ import annotations

import time
import uuid

import pytest
from confluent_kafka import Producer

from gregor.client import AdminClient
from gregor.client.admin import NewTopic
from gregor.protocol.error_codes import ErrorCode
from tests.broker_process import BrokerProcess, free_port
from tests.interop.test_metrics import scrape

pytestmark = pytest.mark.interop
PREFIX = "kafka_server_transaction_coordinator_metrics_"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    metrics_port = free_port()
    process = BrokerProcess(str(tmp_path_factory.mktemp("txn-metrics") / "data"), {
        "metrics.port": str(metrics_port), "metrics.host": "127.0.0.1",
        "transactional.id.expiration.ms": "1500", "transaction.remove.expired.transaction.cleanup.interval.ms": "300",
        "transaction.state.log.num.partitions": "1"})
    process.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    process.start()
    yield process
    process.stop()


def test_commits_aborts_states_and_expiry_are_counted(broker):
    topic, txn_id = f"counted-{uuid.uuid4().hex[:6]}", f"counted-{uuid.uuid4().hex[:6]}"
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        assert not isinstance(admin.create_topics([NewTopic(topic, 1, 1)], timeout=10)[topic], Exception)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": txn_id})
    producer.init_transactions(30)
    for commit in (True, False, True):
        producer.begin_transaction()
        producer.produce(topic, b"v")
        assert producer.flush(30) == 0  # librdkafka sends no EndTxn for a transaction nothing reached
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    metrics = scrape(broker.metrics_url)
    assert metrics[(PREFIX + "transactions_committed_total", ())] == 2
    assert metrics[(PREFIX + "transactions_aborted_total", ())] == 1
    assert metrics[(PREFIX + "transaction_count", (("state", "CompleteCommit"),))] == 1
    deadline = time.monotonic() + 15
    with AdminClient({"bootstrap.servers": broker.bootstrap}) as admin:
        while True:
            found = admin.describe_transactions([txn_id], timeout=10)[txn_id]
            if getattr(found, "code", None) == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
                break
            assert time.monotonic() < deadline, f"{txn_id} did not expire: {found}"
            time.sleep(0.2)
    after = scrape(broker.metrics_url)
    assert after[(PREFIX + "transactional_ids_expired_total", ())] == 1
    assert (PREFIX + "transaction_count", (("state", "CompleteCommit"),)) not in after
