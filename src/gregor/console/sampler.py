"""The live charts' data: log-end and committed offsets sampled every few seconds.

Throughput per topic is the growth of the sum of its partitions' log-end offsets (records per
second, produce side); per group, the growth of its committed offsets (consume side) and its total
lag (log end minus committed, summed over the partitions it committed). Sampling offsets rather than
scraping the brokers' metrics keeps it working against any Kafka-compatible cluster, whose metrics
endpoint the console cannot find through the protocol.

One daemon thread; each sample also refreshes the broker registry and the cluster status, so a
broker that went down and a cluster that cannot be reached show within one interval on every page.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable

from gregor.client import KafkaException, TopicPartition
from gregor.client.admin import OffsetSpec
from gregor.console.inspector import Inspector

log = logging.getLogger("gregor.console")

Point = tuple[int, float]


@dataclass(frozen=True)
class ClusterStatus:
    """Whether the last attempt to reach the cluster worked, and since when it has been so."""

    reachable: bool | None
    """None before the first attempt."""
    error: str | None
    checked_ms: int | None
    since_ms: int | None
    live_brokers: int = 0
    down_brokers: int = 0


class Series:
    """The last `size` points of one number."""

    def __init__(self, size: int) -> None:
        self.points: deque[Point] = deque(maxlen=size)

    def add(self, at_ms: int, value: float) -> None:
        self.points.append((at_ms, value))


class Sampler:
    """Samples offsets on a thread; `snapshot()` is what `/api/series` returns."""

    def __init__(self, inspector: Inspector, interval_s: float, history_s: float,
                 clock: Callable[[], float] = time.time) -> None:
        self._inspector = inspector
        self.interval_s = interval_s
        self._size = max(2, int(history_s / interval_s) + 1)
        self._clock = clock
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._topic_rates: dict[str, Series] = {}
        self._group_lag: dict[str, Series] = {}
        self._group_rates: dict[str, Series] = {}
        self._previous_ends: dict[str, int] = {}
        self._previous_commits: dict[str, int] = {}
        self._previous_at: float | None = None
        self._status = ClusterStatus(None, None, None, None)

    # the thread

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="gregor-console-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.interval_s + 10)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample_once()
            self._stop.wait(self.interval_s)

    # one sample

    def sample_once(self) -> None:
        """One round of sampling; a failure is the status the pages show, never the thread's end."""
        now = self._clock()
        try:
            self._sample(now)
        except KafkaException as error:
            self.report(str(error))
        except Exception as error:  # noqa: BLE001 - any bug shows on the page instead of stopping the charts
            log.exception("sampling the cluster failed")
            self.report(f"{type(error).__name__}: {error}")

    def _sample(self, now: float) -> None:
        inspector = self._inspector
        admin = inspector.admin
        names = list(admin.list_topics(internal=False))
        described = admin.describe_topics(names) if names else {}
        partitions = [p for d in described.values() if not isinstance(d, KafkaException) for p in d.partitions]
        brokers, _, _ = inspector.brokers(partitions)
        ends = inspector.offsets([TopicPartition(p.topic, p.partition) for p in partitions], OffsetSpec.latest())
        group_ids = [listing.group_id for listing in admin.list_consumer_groups()]
        commits = {group: inspector.committed(group) for group in group_ids}
        at_ms = int(now * 1000)
        with self._lock:
            elapsed = now - self._previous_at if self._previous_at is not None else None
            topic_ends: dict[str, int] = {}
            for tp, offset in ends.items():
                topic_ends[tp.topic] = topic_ends.get(tp.topic, 0) + offset
            for topic, total in topic_ends.items():
                self._add_rate(self._topic_rates, self._previous_ends, topic, total, at_ms, elapsed)
            for group, committed in commits.items():
                lag = sum(max(0, ends[tp] - offset) for tp, offset in committed.items() if tp in ends)
                self._series(self._group_lag, group).add(at_ms, lag)
                self._add_rate(self._group_rates, self._previous_commits, group, sum(committed.values()), at_ms,
                               elapsed)
            self._forget(self._topic_rates, self._previous_ends, set(topic_ends))
            self._forget(self._group_lag, self._previous_commits, set(commits))
            self._forget(self._group_rates, {}, set(commits))
            self._previous_at = now
        live = sum(1 for broker in brokers if broker.up)
        self.report(None, live, len(brokers) - live)

    def _add_rate(self, series: dict[str, Series], previous: dict[str, int], key: str, total: int, at_ms: int,
                  elapsed: float | None) -> None:
        before = previous.get(key)
        previous[key] = total
        if before is not None and elapsed:
            # a topic deleted and created again starts from 0: no negative rate
            self._series(series, key).add(at_ms, max(0, total - before) / elapsed)

    def _series(self, series: dict[str, Series], key: str) -> Series:
        if key not in series:
            series[key] = Series(self._size)
        return series[key]

    @staticmethod
    def _forget(series: dict[str, Series], previous: dict[str, int], alive: set[str]) -> None:
        for key in [key for key in series if key not in alive]:
            del series[key]
        for key in [key for key in previous if key not in alive]:
            del previous[key]

    # what the pages read

    def report(self, error: str | None, live: int = 0, down: int = 0) -> None:
        """Record the outcome of an attempt to reach the cluster (pages report theirs too)."""
        now_ms = int(self._clock() * 1000)
        with self._lock:
            reachable = error is None
            since = self._status.since_ms if self._status.reachable == reachable else now_ms
            if reachable:
                self._status = ClusterStatus(True, None, now_ms, since, live, down)
            else:
                self._status = ClusterStatus(False, error, now_ms, since, self._status.live_brokers,
                                             self._status.down_brokers)

    @property
    def status(self) -> ClusterStatus:
        with self._lock:
            return self._status

    def snapshot(self) -> dict[str, Any]:
        with self._lock:
            status = self._status
            return {
                "now": int(self._clock() * 1000),
                "interval_s": self.interval_s,
                "status": {"reachable": status.reachable, "error": status.error, "checked_ms": status.checked_ms,
                           "live_brokers": status.live_brokers, "down_brokers": status.down_brokers},
                "topics": {key: list(series.points) for key, series in sorted(self._topic_rates.items())},
                "group_lag": {key: list(series.points) for key, series in sorted(self._group_lag.items())},
                "group_rate": {key: list(series.points) for key, series in sorted(self._group_rates.items())},
            }

    def topic_rate(self, topic: str) -> float | None:
        """The latest produce rate of a topic (records/s), None before two samples."""
        with self._lock:
            series = self._topic_rates.get(topic)
            return series.points[-1][1] if series and series.points else None
