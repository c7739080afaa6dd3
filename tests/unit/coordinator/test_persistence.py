"""Replaying `__consumer_offsets` rebuilds the groups and offsets a coordinator had."""

from __future__ import annotations

import random

from gregor.coordinator import GroupCoordinator, GroupCoordinatorConfig, GroupState
from gregor.coordinator.group_state import Group
from gregor.protocol.error_codes import ErrorCode

from .harness import SESSION_MS, Harness, subscription


def snapshot(group: Group) -> dict:
    """What a group record and offset records carry (the state timestamp only for groups that
    wrote one: an offset-only group is Empty since its load)."""
    protocol = group.protocol_name
    return {
        "state": group.state, "generation": group.generation_id, "protocol_type": group.protocol_type,
        "protocol": protocol, "leader": group.leader_id, "static": group.static_members,
        "members": {member_id: (m.group_instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                                m.session_timeout_ms, m.metadata(protocol or ""), m.assignment)
                    for member_id, m in group.members.items()},
        "offsets": group.offsets, "subscribed": group.subscribed_topics,
        "since": group.state_timestamp_ms if group.generation_id and group.state is GroupState.EMPTY else None,
    }


def run_scenario() -> Harness:
    h = Harness()
    # A consumer group of three with offsets.
    ids, generation, leader = h.form_group(3, group="orders", protocols=[("range", subscription("orders"))])
    h.commit_now({("orders", p): (p * 10, 2, f"m{p}") for p in range(3)}, group="orders",
                 generation=generation, member_id=ids[1])
    h.commit_now({("orders", 0): (99, 3, "")}, group="orders", generation=generation, member_id=ids[0])
    # Static members, one restarted without a rebalance.
    tokens = [h.join(group="static", instance=f"i-{i}", client_id=f"i-{i}") for i in range(2)]
    h.advance_until(lambda: all(h.answered(token) for token in tokens))
    static = [h.answer(token) for token in tokens]
    for result in static:
        h.sync(result.member_id, result.generation_id, group="static",
               assignments={r.member_id: b"s" for r in static} if result.member_id == result.leader else None)
    h.join_now(group="static", instance="i-1", client_id="i-1")
    # A group whose members all left, with an offset kept after.
    ids, generation, leader = h.form_group(1, group="emptied", protocol_type="connect")
    h.commit_now({("cfg", 0): (5, -1, "")}, group="emptied", generation=generation, member_id=leader)
    h.leave(leader, group="emptied")
    # Simple consumers, with a deleted and an expiring offset.
    h.commit_now({("a", 0): (1, -1, ""), ("a", 1): (2, -1, "")}, group="simple")
    h.commit_now({("b", 0): (3, -1, "meta")}, group="simple", retention=86_400_000)
    h.apply(h.coordinator.delete_offsets(group_id="simple", partitions=[("a", 1)], now_ms=h.now)[1])
    # A group deleted altogether.
    h.commit_now({("z", 0): (1, -1, "")}, group="deleted")
    h.apply(h.coordinator.delete_groups(["deleted"], h.now)[1])
    return h


def reload(h: Harness, now_ms: int) -> GroupCoordinator:
    fresh = GroupCoordinator(h.config, random.Random(99))
    for partition in range(h.config.offsets_topic_num_partitions):
        fresh.begin_load(partition)
        fresh.load_partition(partition, list(h.log.get(partition, [])), now_ms)
    return fresh


def test_replaying_the_log_rebuilds_groups_and_offsets() -> None:
    h = run_scenario()
    fresh = reload(h, h.now)
    assert set(fresh.groups) == set(h.coordinator.groups) == {"orders", "static", "emptied", "simple"}
    for group_id, group in h.coordinator.groups.items():
        assert snapshot(fresh.group(group_id)) == snapshot(group), group_id


def test_loaded_members_carry_on_and_time_out_like_live_ones() -> None:
    h = run_scenario()
    loaded_at = h.now + 5000
    fresh = reload(h, loaded_at)
    group = fresh.group("orders")
    member_ids = list(group.members)
    assert fresh.heartbeat(group_id="orders", member_id=member_ids[0], group_instance_id=None,
                           generation_id=group.generation_id, now_ms=loaded_at + 1000) is ErrorCode.NONE
    fresh.tick(loaded_at + SESSION_MS - 1)
    assert group.state is GroupState.STABLE
    fresh.tick(loaded_at + SESSION_MS)
    assert list(group.members) == [member_ids[0]]
    assert group.state is GroupState.PREPARING_REBALANCE


def test_a_loaded_group_over_the_size_limit_rebalances() -> None:
    h = run_scenario()
    fresh = GroupCoordinator(GroupCoordinatorConfig(group_max_size=2), random.Random(1))
    partition = h.coordinator.partition_for("orders")
    fresh.load_partition(partition, h.log[partition], h.now)
    assert fresh.group("orders").state is GroupState.PREPARING_REBALANCE


def test_unknown_and_malformed_records_are_skipped() -> None:
    h = run_scenario()
    partition = h.coordinator.partition_for("simple")
    records = [(b"\x00\x05\x00\x01x", b"new consumer protocol record"), (b"\x00\x01\x00", b""),
               *h.log[partition], (b"\x00\x02\x00\x06simple", b"\x00\x63")]
    fresh = GroupCoordinator(h.config, random.Random(1))
    fresh.load_partition(partition, records, h.now)
    assert fresh.group("simple").offsets == h.coordinator.group("simple").offsets


def test_compaction_keeps_the_same_state() -> None:
    """Only the last record per key matters, as after the log cleaner compacted the topic."""
    h = run_scenario()
    fresh = GroupCoordinator(h.config, random.Random(1))
    for partition, records in h.log.items():
        latest = dict(records)
        fresh.load_partition(partition, [(key, value) for key, value in latest.items() if value is not None], h.now)
    for group_id in ("orders", "static", "simple", "emptied"):
        assert snapshot(fresh.group(group_id)) == snapshot(h.coordinator.group(group_id)), group_id
