"""AdminClient requests addressed to a node id before any metadata came in, and closing clients
without leaving a task behind on their network thread."""

from __future__ import annotations

import asyncio
import gc
import logging
import threading
import time

import pytest

from gregor.client import AdminClient, KafkaException
from gregor.client.admin import AlterConfigOp, AlterConfigOpType, ConfigResource, ResourceType
from gregor.client.network import NetworkThread
from tests.broker_process import free_port


def fresh_admin(bootstrap: str, **settings: object) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap}, **{"default_api_timeout_ms": 10_000, **settings})


def test_broker_configs_on_a_fresh_client_load_the_broker_list_first(broker):
    """The broker's node id is unknown until a Metadata response names it: the client fetches
    the metadata itself instead of failing with 'node 1 is not in the cluster metadata'."""
    resource = ConfigResource(ResourceType.BROKER, "1")
    with fresh_admin(broker.bootstrap) as admin:
        described = admin.describe_configs([resource])[resource]
        assert not isinstance(described, KafkaException), described
        assert "log.retention.ms" in described
    with fresh_admin(broker.bootstrap) as admin:
        changed = admin.incremental_alter_configs(
            {resource: [AlterConfigOp("log.retention.ms", "7200000", AlterConfigOpType.SET)]})
        assert changed == {resource: None}
    with fresh_admin(broker.bootstrap) as admin:
        assert admin.alter_configs({resource: {"log.retention.ms": None}}) == {resource: None}


def test_a_node_id_the_cluster_does_not_have_is_refused_by_name(broker):
    """Still unknown after a refresh: BROKER_NOT_AVAILABLE for that resource alone, at once (not
    retried until the timeout), while the other resources of the call get their answers."""
    known, unknown = ConfigResource(ResourceType.BROKER, "1"), ConfigResource(ResourceType.BROKER, "7")
    with fresh_admin(broker.bootstrap, retries=50) as admin:
        results = admin.describe_configs([known, unknown])
    assert not isinstance(results[known], KafkaException)
    assert isinstance(results[unknown], KafkaException)
    assert results[unknown].name == "BROKER_NOT_AVAILABLE"
    assert "node 7 is not in the cluster (its brokers: 1)" in str(results[unknown])


class _Complaints(logging.Handler):
    """asyncio's reports of tasks destroyed while pending or failed without anyone looking."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def complaints(monkeypatch):
    handler = _Complaints()
    logger = logging.getLogger("asyncio")
    logger.addHandler(handler)
    crashed: list[str] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: crashed.append(f"{args.thread}: {args.exc_value!r}"))
    yield handler.messages, crashed
    logger.removeHandler(handler)


@pytest.mark.parametrize("close_timeout", [None, 0.001])
def test_closing_leaves_no_task_pending_on_the_network_thread(broker, complaints, close_timeout):
    """Open, use and close clients over and over, against a live broker and a port nobody
    listens on, with a patient and an impatient close: no 'Task was destroyed but it is
    pending!', no 'Task exception was never retrieved', no crash of the network thread."""
    messages, crashed = complaints
    nowhere = f"127.0.0.1:{free_port()}"
    for round_ in range(30):
        admin = fresh_admin(broker.bootstrap if round_ % 2 else nowhere, default_api_timeout_ms=300,
                            metadata_max_age_ms=1 if round_ % 3 == 0 else 300_000,
                            reconnect_backoff_ms=1, reconnect_backoff_max_ms=5)
        try:
            admin.list_topics()
        except KafkaException:
            pass
        admin.close(close_timeout)
        gc.collect()
    assert messages == [] and crashed == []


def test_a_task_slow_to_stop_is_awaited_even_when_close_does_not_wait(complaints):
    """close(timeout) returns after `timeout`, but the network thread still cancels and awaits
    every task (here one whose cleanup takes a while) before it closes its loop."""
    messages, crashed = complaints
    network_thread = NetworkThread(name="test-slow-stop")
    cleaned = threading.Event()

    async def slow_to_stop() -> None:
        try:
            await asyncio.sleep(60)
        finally:
            await asyncio.sleep(0.05)
            cleaned.set()

    network_thread.spawn(slow_to_stop(), name="slow-to-stop")
    network_thread.run(asyncio.sleep(0), 1)
    network_thread.close(0.001)
    assert cleaned.wait(5)
    for _ in range(100):
        if not network_thread.running:
            break
        time.sleep(0.01)
    gc.collect()
    assert not network_thread.running
    assert messages == [] and crashed == []
