"""Seeded schedules of the transaction coordinator, its markers and the partitions, with Jepsen's
checks (`world.py`). The coordinator crashes every few hundred milliseconds of virtual time and
fails over; markers fail and are retried; some produce requests arrive long after their producer
gave up on them.

- With KIP-890's protocol v2 (the epoch bumped on every EndTxn), and with the classic protocol
  when partition leaders verify a transaction's first write with the coordinator (KIP-890 part 1,
  what Gregor's produce path does), every schedule keeps the invariants.
- The classic protocol without that verification (`transaction.partition.verification.enable=false`)
  lets a late write open a transaction the coordinator never hears of (hanging) or land in a later
  transaction: the anomaly Jepsen found in Bufstream. That test shows the checker catches it.

Replay one schedule: TXN_SIM_SEED=<seed> TXN_SIM_MODE=v2|verified|classic pytest tests/sim/transactions -k replay
"""

from __future__ import annotations

import os

import pytest

from tests.sim.transactions.world import Violation, World

CHAOS_MS = 6000
SEEDS = int(os.environ.get("TXN_SIM_SEEDS", "12"))
BASE = int(os.environ.get("TXN_SIM_SEED_BASE", "0"))
MODES = {"v2": dict(protocol_v2=True, verify=False), "verified": dict(protocol_v2=False, verify=True),
         "classic": dict(protocol_v2=False, verify=False)}


def run(seed: int, mode: str) -> World:
    world = World(seed, **MODES[mode])
    world.run(chaos_ms=CHAOS_MS)
    world.check()
    return world


@pytest.mark.parametrize("mode", ["v2", "verified"])
def test_schedules_keep_the_jepsen_invariants(mode):
    committed = crashes = 0
    for seed in range(BASE, BASE + SEEDS):
        try:
            world = run(seed, mode)
        except Violation as violation:
            raise AssertionError(f"{violation}\nreplay: TXN_SIM_SEED={seed} TXN_SIM_MODE={mode}") from None
        committed += sum(outcome == "committed" for outcome in world.outcomes.values())
        crashes += world.crashes
    assert committed > SEEDS * 5 and crashes > SEEDS, "the schedules must commit and crash for real"


def test_classic_protocol_without_verification_lets_late_writes_in():
    found = []
    for seed in range(BASE, BASE + SEEDS):
        try:
            run(seed, "classic")
        except Violation as violation:
            found.append(str(violation))
    assert found, "late writes should hang or join a later transaction without verification"


@pytest.mark.skipif("TXN_SIM_SEED" not in os.environ, reason="set TXN_SIM_SEED to replay one schedule")
def test_replay():
    run(int(os.environ["TXN_SIM_SEED"]), os.environ.get("TXN_SIM_MODE", "v2"))
