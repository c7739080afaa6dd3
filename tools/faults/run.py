"""One fault run: a cluster behind the proxy, the queue or transactional workload, fault cycles,
healing, a final read, the checker. `scripts/faults.py` is its command line; the suite calls `run` with short runs."""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from tools.faults.checker import Report, check
from tools.faults.cluster import Cluster
from tools.faults.history import History
from tools.faults.nemesis import Nemesis
from tools.faults.txn_checker import check_txn
from tools.faults.txn_workload import READ_COMMITTED, TxnWorker
from tools.faults.workload import (
    ConsumerWorker,
    ProducerWorker,
    Values,
    final_read,
    high_watermarks,
    stalled,
)


@dataclass
class Settings:
    root: str
    seconds: float | None = None  # how long faults go on at most (one of `seconds`, `cycles` is needed)
    faults: list[str] = field(default_factory=lambda: ["kill", "pause", "partition-leader"])
    seed: int = 0
    workload: str = "queue"  # or "txn": transactional producers, read_committed consumers
    abort_ratio: float = 0.2  # txn: the share of transactions aborted on purpose
    brokers: int = 3
    controllers: int = 1
    partitions: int = 3
    producers: int = 2
    group_consumers: int = 2
    readers: int = 1
    rate: float = 100.0  # records/s per producer
    acks: str = "all"  # "1": a producer without idempotence, to show what acks=1 loses
    fault_seconds: tuple[float, float] = (2.0, 6.0)  # how long each fault lasts
    rest_seconds: tuple[float, float] = (1.0, 3.0)  # healthy time between faults
    cycles: int | None = None  # stop after this many faults (or at `seconds`, whichever comes first)
    topic_config: dict[str, str] = field(default_factory=lambda: {"min.insync.replicas": "2"})
    catch_up_seconds: float = 60.0  # after healing, for the consumers to read to the end
    history_path: str | None = None
    plot_path: str | None = None
    client_debug: str | None = None  # librdkafka debug contexts for the consumers


@dataclass
class Outcome:
    report: Report
    history: History
    cycles: int
    seconds: float
    stalled: list[str]  # consumers that did not read to the end after healing (liveness)

    @property
    def valid(self) -> bool:
        return self.report.valid and not self.stalled


def run(settings: Settings, log: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True)
        ) -> Outcome:
    if settings.seconds is None and settings.cycles is None:
        raise ValueError("a fault run needs a time (seconds) or a number of faults (cycles)")
    rng = random.Random(settings.seed)
    topic = "queue"
    history = History()
    cluster = Cluster(settings.root, settings.brokers, settings.controllers)
    workers: list[ProducerWorker | TxnWorker | ConsumerWorker] = []
    producers: list[ProducerWorker | TxnWorker] = []
    consumers: list[ConsumerWorker] = []
    started = time.monotonic()
    cycles = 0
    behind: list[str] = []
    try:
        cluster.start()
        cluster.create_topic(topic, settings.partitions, min(settings.brokers, 3), **settings.topic_config)
        log(f"faults: seed {settings.seed}; cluster up ({len(cluster.controllers)} controller(s), "
            f"{len(cluster.brokers)} brokers behind the proxy); faults {','.join(settings.faults)}")
        history.started = time.monotonic()  # the history's clock starts with the workload
        values = Values()
        txn = settings.workload == "txn"
        if txn:
            producers = [TxnWorker(f"txn-{i}", cluster.bootstrap, topic, settings.partitions, history, values,
                                   settings.rate, settings.abort_ratio, settings.seed * 100 + i)
                         for i in range(settings.producers)]
        else:
            producers = [ProducerWorker(f"producer-{i}", cluster.bootstrap, topic, settings.partitions, history,
                                        values, settings.rate, extra=_acks(settings.acks))
                         for i in range(settings.producers)]
        isolation = READ_COMMITTED if txn else None
        consumer_extra = {**(isolation or {}), **({"debug": settings.client_debug} if settings.client_debug else {})}
        consumers = [ConsumerWorker(f"group-{i}", cluster.bootstrap, topic, settings.partitions, history, "queue-group",
                                    extra=consumer_extra) for i in range(settings.group_consumers)]
        consumers += [ConsumerWorker(f"reader-{i}", cluster.bootstrap, topic, settings.partitions, history,
                                     extra=consumer_extra) for i in range(settings.readers)]
        workers = [*producers, *consumers]
        for worker in workers:
            worker.thread.start()
        nemesis = Nemesis(cluster, history, topic, rng)
        deadline = None if settings.seconds is None else time.monotonic() + settings.seconds
        while ((deadline is None or time.monotonic() < deadline)
               and (settings.cycles is None or cycles < settings.cycles)):
            time.sleep(rng.uniform(*settings.rest_seconds))
            fault = settings.faults[cycles % len(settings.faults)]
            heal = nemesis.start(fault)
            time.sleep(rng.uniform(*settings.fault_seconds))
            heal()
            cycles += 1
            log(f"faults: cycle {cycles} {fault}; {_progress(producers)}, "
                f"{sum(c.read for c in consumers)} read")
        cluster.proxy.heal_all()
        cluster.wait_for_full_isr(topic, min(settings.brokers, 3))
        for producer in producers:
            if isinstance(producer, TxnWorker):
                producer.finish()
            else:
                producer.finish(120)
        ends = high_watermarks(cluster.bootstrap, topic, settings.partitions)
        behind = stalled(consumers, ends, settings.catch_up_seconds)
        for line in behind:
            log(f"faults: STALLED (high watermarks {ends}): {line}")
        for consumer in consumers:
            consumer.stopping.set()
            consumer.thread.join(30)
        final_read(cluster.bootstrap, topic, settings.partitions, history, extra=isolation)
        log(f"faults: healed; high watermarks {ends}; connections through the proxy "
            + ", ".join(f"{src}->{dst} {n}" for (src, dst), n in sorted(cluster.proxy.connections.items())))
    finally:
        for worker in workers:
            worker.stopping.set()
        cluster.stop()
    report = check_txn(history.ops) if settings.workload == "txn" else check(history.ops)
    elapsed = time.monotonic() - started
    if settings.history_path:
        history.write(settings.history_path)
    if settings.plot_path:
        from tools.faults.plot import plot
        plot(history.ops, settings.plot_path)
    return Outcome(report, history, cycles, elapsed, behind)


def _acks(acks: str) -> dict[str, object] | None:
    """Producer settings for `acks`: idempotence needs acks=all, so other levels go without it."""
    return None if acks == "all" else {"acks": acks, "enable.idempotence": False}


def _progress(producers: list[ProducerWorker | TxnWorker]) -> str:
    if all(isinstance(producer, TxnWorker) for producer in producers):
        counts = [sum(getattr(p, name) for p in producers) for name in ("committed", "aborted", "indeterminate")]
        return "transactions committed {}, aborted {}, indeterminate {}".format(*counts)
    return f"{sum(p.acknowledged for p in producers if isinstance(p, ProducerWorker))} acknowledged"
