"""Seeded random schedules of 3- and 5-voter quorums with every fault at once, invariants checked
after every step (see cluster.py), then a healed network that must elect and commit.

A failure names its seed; replay it alone with
    RAFT_SIM_SEED=<seed> RAFT_SIM_VOTERS=<n> RAFT_SIM_CHAOS_MS=<ms> pytest tests/sim/raft -k replay
and explore other seeds with RAFT_SIM_SEED_BASE=<offset>. The suite runs 1,100 short and 200 long
schedules, what its time on a 2-core machine allows; a change to raft deserves a few other bases
run by hand.
"""

from __future__ import annotations

import os

import pytest

from tests.sim.raft.schedule import run_schedule

SEED_BASE = int(os.environ.get("RAFT_SIM_SEED_BASE", "0"))
REPLAY_SEED = os.environ.get("RAFT_SIM_SEED")
CHUNK = 100
CHAOS_MS = 5_000
LONG_CHAOS_MS = 20_000


def run_chunk(voters: int, first_seed: int, chaos_ms: int) -> None:
    for seed in range(first_seed, first_seed + CHUNK):
        run_schedule(seed, voters, chaos_ms)


@pytest.mark.skipif(REPLAY_SEED is None, reason="set RAFT_SIM_SEED to replay one schedule")
def test_replay():
    run_schedule(int(REPLAY_SEED), int(os.environ.get("RAFT_SIM_VOTERS", "3")),
                 int(os.environ.get("RAFT_SIM_CHAOS_MS", str(CHAOS_MS))))


@pytest.mark.parametrize("chunk", range(8))
def test_three_voters(chunk):
    run_chunk(3, SEED_BASE + chunk * CHUNK, CHAOS_MS)


@pytest.mark.parametrize("chunk", range(3))
def test_five_voters(chunk):
    run_chunk(5, SEED_BASE + 100_000 + chunk * CHUNK, CHAOS_MS)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(1))
def test_three_voters_long(chunk):
    run_chunk(3, SEED_BASE + 200_000 + chunk * CHUNK, LONG_CHAOS_MS)


@pytest.mark.slow
@pytest.mark.parametrize("chunk", range(1))
def test_five_voters_long(chunk):
    run_chunk(5, SEED_BASE + 300_000 + chunk * CHUNK, LONG_CHAOS_MS)
