"""Share groups' `__consumer_offsets` records (Kafka's ShareGroup* layout): a group replayed from
its records is the group that wrote them; the records a change needs are only those that differ,
tombstones (members' before the group's epoch record) for what went."""

from __future__ import annotations

import uuid

from gregor.coordinator.share import share_group_records as records
from gregor.coordinator.share.share_group import ShareGroupConfig, ShareGroupCoordinator

IDS = {"t": uuid.UUID(int=7), "u": uuid.UUID(int=8)}
NAMES = {topic_id: name for name, topic_id in IDS.items()}


def _replayed(written: list[tuple[bytes, bytes | None]], now_ms: int = 1000):
    replay = records.ShareGroupReplay()
    for key, value in written:
        replay.apply(int.from_bytes(key[:2], "big", signed=True), key, value)
    return {group.group_id: group for group in replay.groups(NAMES, now_ms, 45000)}


def test_a_replayed_share_group_has_its_members_epochs_assignments_and_state_topics():
    coordinator = ShareGroupCoordinator(ShareGroupConfig())
    counts = {"t": 2, "u": 1}
    a = coordinator.heartbeat("g", "a", 0, "rack-1", ["t"], "client-a", "10.0.0.1", counts, 0)
    coordinator.heartbeat("g", "b", 0, None, ["t", "u"], "client-b", "10.0.0.2", counts, 0)
    coordinator.heartbeat("g", "a", a.member_epoch, None, None, "client-a", "10.0.0.1", counts, 0)
    group = coordinator.groups["g"]
    group.state_topics.add("u")
    log = records.changes({}, records.group_records(group, IDS))
    replayed = _replayed(log)["g"]
    assert (replayed.group_epoch, replayed.assignment_epoch) == (group.group_epoch, group.assignment_epoch)
    assert replayed.partition_counts == group.partition_counts and replayed.state_topics == {"t", "u"}
    assert replayed.target == group.target
    for member_id, member in group.members.items():
        again = replayed.members[member_id]
        assert (again.member_epoch, again.previous_epoch, again.assignment) == \
            (member.member_epoch, member.previous_epoch, member.assignment)
        assert (again.client_id, again.client_host, again.rack_id, again.subscribed) == \
            (member.client_id, member.client_host, member.rack_id, member.subscribed)
        assert again.session_deadline_ms == 1000 + 45000  # a fresh session, as Kafka's loaded members


def test_only_changed_records_are_written_and_a_leaving_member_and_a_deleted_group_leave_tombstones():
    coordinator = ShareGroupCoordinator(ShareGroupConfig())
    counts = {"t": 2}
    for member_id in ("a", "b"):
        coordinator.heartbeat("g", member_id, 0, None, ["t"], "c", "h", counts, 0)
    first = records.group_records(coordinator.groups["g"], IDS)
    log = records.changes({}, first)
    assert records.changes(first, records.group_records(coordinator.groups["g"], IDS)) == []
    coordinator.heartbeat("g", "b", -1, None, None, "c", "h", counts, 0)
    second = records.group_records(coordinator.groups["g"], IDS)
    step = records.changes(first, second)
    tombstones = [key for key, value in step if value is None]
    assert len(tombstones) == 3  # b's metadata, target and current assignment
    assert all(value is not None for _, value in step[3:])
    log += step
    assert set(_replayed(log)["g"].members) == {"a"}
    coordinator.heartbeat("g", "a", -1, None, None, "c", "h", counts, 0)
    assert coordinator.delete("g").name == "NONE"
    gone = records.changes(second, {})
    assert all(value is None for _, value in gone)
    assert int.from_bytes(gone[-1][0][:2], "big") == records.GROUP_METADATA  # the group's epoch record last
    assert _replayed(log + gone) == {}
