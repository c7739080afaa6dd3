"""Thousands of small acks=all produces per simulated second, as a linger.ms=0 producer sends them,
through the production replication code: the leader's purgatories (delayed produce, follower
fetches held until records arrive), the followers' fetcher links, invariants after every step.

Without faults every produce is acknowledged NONE within a few replication round trips of
simulated time, with hundreds waiting at once: each high-watermark move must answer exactly the
produces it passed, and a follower's fetch held by the leader must be answered by the next append.
With a follower paused and the leader crashed on the way, the invariants hold and the healed
cluster converges with every acknowledged record in place. (Simulated time has no CPU cost: the
cost of the purgatories themselves is measured by benchmarks/e2e_latency.py, not here.)
"""

from __future__ import annotations

from typing import Callable

import pytest

from gregor.protocol.error_codes import ErrorCode

from tests.sim.replication.cluster import BROKERS, SIM_REPLICATION, Cluster, Faults
from tests.sim.replication.schedule import settle

RATE_PER_MS = 2  # 2,000 acks=all produces per simulated second
SECONDS_MS = 1_000


def drive(cluster: Cluster, until_ms: int, faults: dict[int, Callable[[], None]] | None = None) -> list[int]:
    """Produce RATE_PER_MS acks=all batches every simulated millisecond until `until_ms`."""
    tokens: list[int] = []
    faults = dict(faults or {})

    def tick() -> None:
        for _ in range(RATE_PER_MS):
            token = cluster.produce(-1)
            if token is not None:
                tokens.append(token)
        if (fault := faults.pop(cluster.now, None)) is not None:
            fault()
        if cluster.now < until_ms:
            cluster.at(cluster.now + 1, tick)

    cluster.at(cluster.now + 1, tick)
    cluster.run_until(until_ms)
    return tokens


@pytest.mark.parametrize("seed", [1, 2, 5])
def test_every_produce_is_acknowledged_within_a_few_round_trips(seed):
    with Cluster(seed) as cluster:
        cluster.faults = Faults(max_delay_ms=1, produce_rate=0.0)
        assert cluster.run_until(2_000, lambda: cluster.leader() is not None and
                                 len(cluster.controller.state.isr) == len(BROKERS))
        started = cluster.now
        tokens = drive(cluster, started + SECONDS_MS)
        assert cluster.run_until(cluster.now + 1_000, lambda: all(t in cluster.answers for t in tokens))
        assert {cluster.answers[t] for t in tokens} == {ErrorCode.NONE}
        waits = sorted(cluster.answered_at[t] - cluster.sent_at[t] for t in tokens)
        assert len(tokens) == RATE_PER_MS * SECONDS_MS
        # links deliver within 1 ms: a fetch that missed its wake-up would wait out its max wait
        assert waits[len(waits) // 2] <= 6 and waits[-1] < SIM_REPLICATION.replica_fetch_wait_max_ms, waits[-50:]
        assert cluster.stats["parked_fetches"] > 0
        # produces arriving at the same instant are appended together, as a busy leader's step does
        assert cluster.stats["gathered produces"] > cluster.stats["gathered appends"] > 0


def test_a_paused_follower_and_a_crashed_leader_under_load_lose_nothing_acknowledged():
    with Cluster(3) as cluster:
        cluster.faults = Faults(max_delay_ms=2, produce_rate=0.0)
        assert cluster.run_until(2_000, lambda: cluster.leader() is not None and
                                 len(cluster.controller.state.isr) == len(BROKERS))
        start = cluster.now
        leader = cluster.leader().broker_id
        follower = next(b for b in BROKERS if b != leader)
        drive(cluster, start + 800, {start + 200: lambda: cluster.pause(follower, 300),
                                     start + 500: lambda: cluster.crash(leader, 300)})
        settle(cluster)
        assert cluster.stats["crashes"] == 1 and cluster.stats["answered NONE"] > 300
