"""Helpers for the consumer-group tests: a listener that records its calls, and polling
several consumers at once (each on its own thread, as the one-thread rule wants)."""

from __future__ import annotations

import threading
import time
from typing import Callable

from gregor.client.consumer import Consumer, ConsumerRebalanceListener


class RebalanceCalls(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, frozenset]] = []

    def on_partitions_revoked(self, partitions):
        self.calls.append(("revoked", frozenset(partitions)))

    def on_partitions_assigned(self, partitions):
        self.calls.append(("assigned", frozenset(partitions)))

    def on_partitions_lost(self, partitions):
        self.calls.append(("lost", frozenset(partitions)))


def poll_until(consumers: list[Consumer], condition: Callable[[], bool], timeout: float = 40) -> None:
    """Poll each consumer on its own thread until `condition()` holds (or fail at `timeout`)."""
    stop = threading.Event()

    def loop(consumer: Consumer) -> None:
        while not stop.is_set():
            consumer.poll(0.1)

    threads = [threading.Thread(target=loop, args=(consumer,)) for consumer in consumers]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + timeout
    try:
        while not condition() and time.monotonic() < deadline:
            time.sleep(0.05)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert condition(), "assignments: " + "; ".join(
        f"{consumer}: {sorted((p.topic, p.partition) for p in consumer.assignment())}" for consumer in consumers)
