"""Seeded random schedules of a three-replica partition with every fault at once, invariants
checked after every step (see cluster.py), then a healed cluster that must converge.

Each seed draws its own fault mix, truncation mode (OffsetsForLeaderEpoch or diverging epoch),
min.insync.replicas, flush policy, segment size and, in some, unclean leader election or crashes
that lose unflushed data. A failure names its seed; replay it alone with
    REPLICATION_SIM_SEED=<seed> REPLICATION_SIM_CHAOS_MS=<ms> pytest tests/sim/replication -k replay
and explore other seeds with REPLICATION_SIM_SEED_BASE=<offset>. The suite runs 1,200 short and
200 long schedules, what its time on a 2-core machine allows (a quarter of it went to the
simulations); a change to the replication layer deserves a few other bases run by hand.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest

from tests.sim.replication.cluster import Cluster
from tests.sim.replication.schedule import run_schedule

SEED_BASE = int(os.environ.get("REPLICATION_SIM_SEED_BASE", "0"))
REPLAY_SEED = os.environ.get("REPLICATION_SIM_SEED")
CHUNK = 100
CHAOS_MS = 3_000
LONG_CHAOS_MS = 15_000


def run_chunk(first_seed: int, chaos_ms: int) -> Counter[str]:
    """Run the schedules; the chunk must have exercised what the invariants are about."""
    stats: Counter[str] = Counter()
    for seed in range(first_seed, first_seed + CHUNK):
        with Cluster(seed) as cluster:
            run_schedule(cluster, chaos_ms)
        stats.update(cluster.stats)
    for event in ("crashes", "lossy_crashes", "leader_changes", "isr_changes", "truncations",
                  "answered NONE", "answered NOT_LEADER_OR_FOLLOWER", "markers appended", "aborted_transactions"):
        assert stats[event] > 0, f"no {event} in seeds {first_seed}..{first_seed + CHUNK - 1}: {stats}"
    return stats


@pytest.mark.skipif(REPLAY_SEED is None, reason="set REPLICATION_SIM_SEED to replay one schedule")
def test_replay():
    with Cluster(int(REPLAY_SEED)) as cluster:
        run_schedule(cluster, int(os.environ.get("REPLICATION_SIM_CHAOS_MS", str(CHAOS_MS))))


@pytest.mark.parametrize("chunk", range(12))
def test_three_replicas(chunk):
    run_chunk(SEED_BASE + chunk * CHUNK, CHAOS_MS)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(2))  # 200 long schedules: about a minute and a half each chunk on 2 cores
def test_three_replicas_long(chunk):
    run_chunk(SEED_BASE + 100_000 + chunk * CHUNK, LONG_CHAOS_MS)
