"""NetworkThread: the bridge from user threads into the client's one event loop."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from gregor.client.errors import KafkaException, KafkaTimeoutError
from gregor.client.network import NetworkThread


@pytest.fixture
def network_thread():
    thread = NetworkThread(name="test-network")
    yield thread
    thread.close(2)


def test_run_returns_results_and_raises_errors_from_the_loop_thread(network_thread):
    async def where() -> str:
        return threading.current_thread().name

    async def fail() -> None:
        raise KafkaException(3, "no such topic")

    assert network_thread.run(where(), 1) == "test-network"
    with pytest.raises(KafkaException, match="UNKNOWN_TOPIC_OR_PARTITION"):
        network_thread.run(fail(), 1)


def test_a_timeout_cancels_the_coroutine_and_raises_timed_out(network_thread):
    cancelled = threading.Event()

    async def forever() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    started = time.monotonic()
    with pytest.raises(KafkaTimeoutError) as timed_out:
        network_thread.run(forever(), 0.2)
    assert timed_out.value.name == "_TIMED_OUT" and time.monotonic() - started < 1
    assert cancelled.wait(1)


def test_blocking_from_the_network_thread_itself_is_refused(network_thread):
    async def nested() -> None:
        async def inner() -> None:
            return None
        network_thread.run(inner(), 1)

    with pytest.raises(KafkaException) as refused:
        network_thread.run(nested(), 1)
    assert refused.value.name == "_STATE"


def test_close_cancels_spawned_tasks_stops_the_thread_and_refuses_new_work():
    network_thread = NetworkThread()
    stopped = threading.Event()

    async def sender_loop() -> None:
        try:
            while True:
                await asyncio.sleep(0.01)
        finally:
            stopped.set()

    task = network_thread.spawn(sender_loop(), name="sender")
    woken = threading.Event()
    network_thread.call_soon(woken.set)
    assert woken.wait(1)
    network_thread.close(2)
    assert stopped.is_set() and task.cancelled()
    assert not network_thread.running
    with pytest.raises(KafkaException) as closed:
        network_thread.run(asyncio.sleep(0), 1)
    assert closed.value.name == "_DESTROY"
    network_thread.close(1)


def test_a_call_pending_when_the_client_closes_fails_with_destroy():
    network_thread = NetworkThread()
    outcome: list[BaseException] = []

    def wait_forever() -> None:
        try:
            network_thread.run(asyncio.sleep(60), 10)
        except KafkaException as error:
            outcome.append(error)

    caller = threading.Thread(target=wait_forever)
    caller.start()
    time.sleep(0.1)
    network_thread.close(2)
    caller.join(2)
    assert [error.name for error in outcome] == ["_DESTROY"]
