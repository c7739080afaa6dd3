"""Seeded simulation of the share-partition state machine against a model of what it promised.

Members fetch (acquire from the log), acknowledge (accept, release, reject, and now and then
records they do not hold), leave, and time moves past acquisition locks. After every step:
a record is held by at most one member and only by the one it was acquired for, no accepted or
rejected record is acquired again, delivery counts equal the model's count of acquisitions, the
start offset never passes an unfinished record, no more than `max_record_locks` records are in
flight, and polling before `next_deadline()` changes nothing. At the end every record of the
log was finished: accepted, rejected, or archived after exactly `delivery_count_limit`
deliveries; none skipped. A failure names the seed:

    SHARE_SIM_SEED=<seed> pytest tests/sim/share -k replay
"""

from __future__ import annotations

import os
import random

import pytest

from gregor.coordinator.share.record_state import RecordState
from gregor.coordinator.share.share_partition import (
    Acknowledgement, SharePartition, SharePartitionConfig,
)
from gregor.protocol.error_codes import ErrorCode

SEEDS = int(os.environ.get("SHARE_SIM_SEEDS", "60"))
SEED_BASE = int(os.environ.get("SHARE_SIM_SEED_BASE", "0"))


def make_log(rng: random.Random) -> list[tuple[int, int, bool]]:
    """Batches (base, last, is_control) with holes between some of them (compaction)."""
    batches = []
    offset = 0
    for _ in range(rng.randint(3, 12)):
        offset += rng.choice((0, 0, 0, 2))
        size = rng.randint(1, 6)
        control = rng.random() < 0.1
        batches.append((offset, offset + (0 if control else size - 1), control))
        offset = batches[-1][1] + 1
    return batches


class Model:
    def __init__(self, log: list[tuple[int, int, bool]], limit: int) -> None:
        self.data = {o for b, last, control in log if not control for o in range(b, last + 1)}
        self.holder: dict[int, str] = {}
        self.deliveries: dict[int, int] = {}
        self.accepted: set[int] = set()
        self.rejected: set[int] = set()
        self.limit = limit


def run(seed: int) -> None:
    rng = random.Random(seed)
    config = SharePartitionConfig(lock_duration_ms=rng.choice((50, 200)), delivery_count_limit=rng.randint(1, 4),
                                  max_record_locks=rng.randint(3, 40))
    log = make_log(rng)
    model = Model(log, config.delivery_count_limit)
    sp = SharePartition(config, 0)
    members = [f"m{i}" for i in range(rng.randint(1, 4))]
    now = 0
    trail: list[str] = []

    def fail(message: str) -> None:
        pytest.fail(f"seed {seed}: {message}\nlast steps: {trail[-12:]}\n"
                    f"replay: SHARE_SIM_SEED={seed} pytest tests/sim/share -k replay")

    def check() -> None:
        if len(sp.in_flight()) > config.max_record_locks:
            fail(f"{len(sp.in_flight())} records in flight, more than {config.max_record_locks}")
        for offset, rec in sp.in_flight().items():
            if offset < sp.start_offset:
                fail(f"offset {offset} in flight below start {sp.start_offset}")
            if rec.state == RecordState.ACQUIRED:
                if model.holder.get(offset) != rec.member_id:
                    fail(f"offset {offset} held by {rec.member_id}, model says {model.holder.get(offset)}")
            elif offset in model.holder:
                fail(f"offset {offset} is {rec.state.name} but the model has it held")
            if offset in model.data and rec.delivery_count != model.deliveries.get(offset, 0):
                fail(f"offset {offset} delivery count {rec.delivery_count} != {model.deliveries.get(offset, 0)}")
            if rec.state == RecordState.ARCHIVED and offset in model.data and offset not in model.rejected \
                    and model.deliveries.get(offset, 0) < model.limit:
                fail(f"offset {offset} archived after {rec.delivery_count} deliveries, limit {model.limit}")
        for offset in model.data:
            if offset >= sp.start_offset:
                continue
            if offset not in model.accepted | model.rejected and model.deliveries.get(offset, 0) < model.limit:
                fail(f"start offset {sp.start_offset} passed unfinished offset {offset}")

    def release_in_model(offset: int) -> None:
        model.holder.pop(offset, None)

    for step in range(rng.randint(40, 160)):
        action = rng.random()
        member = rng.choice(members)
        if action < 0.4:
            start = sp.acquirable_from()
            if start is None:
                continue
            batches = [b for b in log if b[1] >= start]
            got = sp.acquire(member, batches, rng.randint(1, 10), now)
            trail.append(f"t={now} {member} acquire from {start}: {got}")
            for r in got:
                for offset in range(r.first_offset, r.last_offset + 1):
                    if offset not in model.data:
                        fail(f"acquired {offset}, which is no record")
                    if offset in model.holder:
                        fail(f"{member} acquired {offset} held by {model.holder[offset]}")
                    if offset in model.accepted or offset in model.rejected:
                        fail(f"acquired {offset}, which was acknowledged")
                    model.holder[offset] = member
                    model.deliveries[offset] = model.deliveries.get(offset, 0) + 1
                    if model.deliveries[offset] != r.delivery_count:
                        fail(f"delivery count of {offset}: {r.delivery_count} != {model.deliveries[offset]}")
        elif action < 0.75:
            held = sorted(o for o, m in model.holder.items() if m == member)
            foreign = rng.random() < 0.15
            if foreign:
                others = sorted(o for o, m in model.holder.items() if m != member) or [sp.end_offset + 3]
                target = [rng.choice(others)]
            else:
                target = [o for o in held if rng.random() < 0.7]
            if not target:
                continue
            kinds = {o: rng.choice((1, 1, 1, 2, 3)) for o in target}
            acks = [Acknowledgement(o, o, (kinds[o],)) for o in target]
            error = sp.acknowledge(member, acks, now)
            trail.append(f"t={now} {member} ack {kinds} -> {error.name}")
            if foreign:
                if error != ErrorCode.INVALID_RECORD_STATE:
                    fail(f"ack of a record {member} does not hold answered {error.name}")
                continue
            if error != ErrorCode.NONE:
                fail(f"ack of held records answered {error.name}")
            for offset, kind in kinds.items():
                release_in_model(offset)
                if kind == 1:
                    model.accepted.add(offset)
                elif kind == 3:
                    model.rejected.add(offset)
        elif action < 0.82:
            sp.release_member(member, now)
            trail.append(f"t={now} {member} leaves")
            for offset in [o for o, m in model.holder.items() if m == member]:
                release_in_model(offset)
        else:
            deadline = sp.next_deadline()
            before = sp.version
            if deadline is not None and deadline > now and sp.expire_locks(deadline - 1):
                fail("locks expired before the next deadline")
            if sp.version != before:
                fail("polling before the deadline changed state")
            now += rng.randint(1, 3 * config.lock_duration_ms)
            expired = sp.expire_locks(now)
            trail.append(f"t={now} expire -> {expired}")
            for offset in [o for o, rec in sp.in_flight().items() if rec.state != RecordState.ACQUIRED]:
                release_in_model(offset)
            for offset in [o for o in list(model.holder) if o < sp.start_offset]:
                release_in_model(offset)
        check()

    # Drain: one member takes and accepts everything still deliverable.
    for _ in range(10000):
        start = sp.acquirable_from()
        if start is None:
            now += config.lock_duration_ms
            sp.expire_locks(now)
            for offset in [o for o, rec in sp.in_flight().items() if rec.state != RecordState.ACQUIRED]:
                release_in_model(offset)
            if sp.acquirable_from() is None:
                break
            continue
        got = sp.acquire("drain", [b for b in log if b[1] >= start], 50, now)
        if not got:
            if sp.end_offset > log[-1][1] and not any(r.state == RecordState.ACQUIRED for r in sp.in_flight().values()):
                break
            now += config.lock_duration_ms
            sp.expire_locks(now)
            for offset in [o for o, rec in sp.in_flight().items() if rec.state != RecordState.ACQUIRED]:
                release_in_model(offset)
            continue
        for r in got:
            for offset in range(r.first_offset, r.last_offset + 1):
                if offset in model.holder:
                    fail(f"drain acquired {offset} held by {model.holder[offset]}")
                model.deliveries[offset] = model.deliveries.get(offset, 0) + 1
        acks = [Acknowledgement(r.first_offset, r.last_offset, (1,)) for r in got]
        if sp.acknowledge("drain", acks, now) != ErrorCode.NONE:
            fail("drain could not accept what it acquired")
        for r in got:
            model.accepted.update(range(r.first_offset, r.last_offset + 1))
        check()
    end = log[-1][1] + 1
    if sp.start_offset != end:
        fail(f"start offset {sp.start_offset} did not reach the log end {end}: {sp.in_flight()}")
    for offset in model.data:
        finished = (offset in model.accepted or offset in model.rejected
                    or model.deliveries.get(offset, 0) == model.limit)
        if not finished:
            fail(f"offset {offset} skipped: never accepted, rejected or delivered {model.limit} times")
        if offset in model.accepted and offset in model.rejected:
            fail(f"offset {offset} both accepted and rejected")


@pytest.mark.parametrize("seed", range(SEED_BASE, SEED_BASE + SEEDS))
def test_share_partition_schedule(seed: int) -> None:
    run(seed)


@pytest.mark.skipif("SHARE_SIM_SEED" not in os.environ, reason="set SHARE_SIM_SEED to replay one schedule")
def test_replay() -> None:
    run(int(os.environ["SHARE_SIM_SEED"]))
