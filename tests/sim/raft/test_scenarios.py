"""Targeted raft scenarios on the simulator, without random faults: each one a named hazard."""

from __future__ import annotations

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages.describe_quorum import DescribeQuorumRequest
from gregor.raft.effects import Respond
from gregor.raft.memory_log import MemoryLog
from gregor.raft.quorum_state import Role
from gregor.records.batch import scan_batches
from gregor.records.record import BatchBuilder, decode_records
from tests.sim.raft.cluster import SIM_CONFIG, Cluster, Faults
from tests.sim.raft.schedule import settle


def quiet(voters: int = 3, observers: int = 0, logs: dict[int, MemoryLog] | None = None, seed: int = 1) -> Cluster:
    return Cluster(seed, voters=voters, observers=observers, faults=Faults(max_delay_ms=2), logs=logs)


def wait(cluster: Cluster, condition, within_ms: int = 5000) -> None:
    if not cluster.run_until(cluster.now + within_ms, condition):
        cluster.fail("the awaited condition never held")


def elected(cluster: Cluster) -> int:
    wait(cluster, lambda: cluster.leader() is not None)
    return cluster.leader()


def commit(cluster: Cluster, count: int, among: set[int] | None = None) -> list[int]:
    """Append `count` values at the leader; wait until every running node (of `among`) applied them."""
    offsets = []
    for _ in range(count):
        offsets.append(cluster.append(elected(cluster)))
    waiting = [cluster.nodes[n] for n in (among or cluster.nodes)]
    wait(cluster, lambda: all(n.client is None or n.applied_offset > offsets[-1] for n in waiting))
    return offsets


def log_values(log: MemoryLog) -> list[tuple[int, int, bytes]]:
    data = log.read(log.start_offset, log.end_offset, 1 << 30)
    batches, _ = scan_batches(data)
    return [(r.offset, h.partition_leader_epoch, r.value) for h, pos in batches if not h.is_control
            for r in decode_records(data, pos, h, 1 << 30)]


def batch(*values: bytes) -> bytes:
    builder = BatchBuilder()
    for value in values:
        builder.append(0, None, value)
    return builder.build()


def test_three_voters_elect_one_leader_and_replicate():
    cluster = quiet()
    leader = elected(cluster)
    offsets = commit(cluster, 5)
    assert offsets == list(range(offsets[0], offsets[0] + 5))
    states = {n.node_id: n.client.quorum.state for n in cluster.nodes.values()}
    assert [s.role for s in states.values()].count(Role.LEADER) == 1
    assert all(s.leader_id == leader and s.epoch == states[leader].epoch for s in states.values())
    assert len({tuple(n.applied) for n in cluster.nodes.values()}) == 1
    assert len(cluster.nodes[leader].applied) == 5


def test_a_candidate_lost_mid_election_leaves_the_others_to_elect_without_losing_commits():
    cluster = quiet(voters=5)
    first = elected(cluster)
    commit(cluster, 3)
    cluster.crash(first, 3000)
    wait(cluster, lambda: any(n.client is not None and n.client.quorum.role == Role.CANDIDATE
                              for n in cluster.nodes.values()))
    candidate = next(n.node_id for n in cluster.nodes.values()
                     if n.client is not None and n.client.quorum.role == Role.CANDIDATE)
    epoch = cluster.nodes[candidate].client.leader_epoch
    cluster.crash(candidate, 3000)
    second = elected(cluster)
    assert second not in (first, candidate)
    assert cluster.nodes[second].client.leader_epoch > epoch - 1
    commit(cluster, 2)
    wait(cluster, lambda: all(n.client is not None for n in cluster.nodes.values()), 4000)
    assert cluster.nodes[candidate].store.read().epoch >= epoch
    settle(cluster)
    assert len(cluster.nodes[second].applied) >= 5


def test_a_stale_leader_partitioned_away_resigns_then_truncates_its_uncommitted_tail():
    cluster = quiet(voters=3)
    stale = elected(cluster)
    commit(cluster, 2)
    others = set(cluster.nodes) - {stale}
    cluster.partition({stale}, others)
    lost = [cluster.append(stale) for _ in range(3)]
    assert None not in lost
    wait(cluster, lambda: not cluster.nodes[stale].client.is_leader, SIM_CONFIG.fetch_timeout_ms * 2)
    assert cluster.nodes[stale].client.quorum.role in (Role.RESIGNED, Role.CANDIDATE)
    new_leader = elected(cluster)
    assert new_leader in others
    commit(cluster, 2, among=others)
    stale_values = [v for _, _, v in log_values(cluster.nodes[stale].log)]
    assert len(stale_values) == 5
    cluster.heal()
    leader_log = cluster.nodes[cluster.leader()].log
    wait(cluster, lambda: log_values(cluster.nodes[stale].log) == log_values(leader_log)
         and cluster.nodes[stale].log.end_offset == leader_log.end_offset)
    kept = [v for _, _, v in log_values(cluster.nodes[stale].log)]
    assert not set(kept) & set(stale_values[2:])
    settle(cluster)


def test_a_follower_with_a_divergent_log_truncates_to_the_diverging_epoch():
    logs = {n: MemoryLog() for n in (1, 2, 3)}
    for n in (1, 3):
        logs[n].append_as_leader(batch(b"a"), 1, 0)
        logs[n].append_as_leader(batch(b"b", b"c"), 2, 0)
    logs[2].append_as_leader(batch(b"a"), 1, 0)
    logs[2].append_as_leader(batch(b"x"), 1, 0)
    logs[2].append_as_leader(batch(b"y", b"z"), 1, 0)
    cluster = quiet(logs=logs)
    leader = elected(cluster)
    assert leader in (1, 3)
    follower_log = cluster.nodes[2].log
    wait(cluster, lambda: follower_log.end_offset == cluster.nodes[leader].log.end_offset
         and follower_log.high_watermark == follower_log.end_offset)
    assert [v for _, _, v in log_values(follower_log)] == [b"a", b"b", b"c"]
    assert [e for _, e, _ in log_values(follower_log)] == [1, 2, 2]
    assert follower_log.end_offset_for_epoch(1) == (1, 1)


def test_a_lagging_follower_installs_the_leaders_snapshot_in_chunks():
    cluster = quiet()
    leader = elected(cluster)
    lagging = min(set(cluster.nodes) - {leader})
    commit(cluster, 2)
    cluster.crash(lagging, 4000)
    commit(cluster, 20)
    for node in set(cluster.nodes) - {lagging}:
        cluster.snapshot(node)
    leader_log = cluster.nodes[leader].log
    snapshot = leader_log.latest_snapshot()
    assert leader_log.start_offset == snapshot.id.end_offset > 0
    assert len(snapshot.data) > SIM_CONFIG.snapshot_chunk_bytes
    wait(cluster, lambda: cluster.nodes[lagging].client is not None, 5000)
    wait(cluster, lambda: cluster.nodes[lagging].applied_offset >= snapshot.id.end_offset)
    assert cluster.nodes[lagging].log.latest_snapshot() == snapshot
    assert cluster.nodes[lagging].log.start_offset == snapshot.id.end_offset
    commit(cluster, 1)
    assert cluster.nodes[lagging].applied == cluster.nodes[leader].applied


def test_graceful_resignation_hands_leadership_on_before_any_timeout():
    cluster = quiet()
    leader = elected(cluster)
    commit(cluster, 1)
    epoch = cluster.nodes[leader].client.leader_epoch
    resigned_at = cluster.now
    cluster.resign(leader)
    wait(cluster, lambda: cluster.leader() not in (None, leader))
    assert cluster.nodes[cluster.leader()].client.leader_epoch == epoch + 1
    assert cluster.now - resigned_at < SIM_CONFIG.election_timeout_ms


def test_observers_replicate_but_never_vote_or_stand():
    cluster = quiet(voters=3, observers=1)
    elected(cluster)
    commit(cluster, 4)
    observer = cluster.nodes[4]
    assert observer.applied == cluster.nodes[cluster.leader()].applied
    assert observer.client.quorum.role == Role.FOLLOWER and not observer.client.is_voter
    assert observer.store.read().voted_id == -1 and 4 not in cluster.leaders.values()
    leader_client = cluster.nodes[cluster.leader()].client
    [respond] = [e for e in leader_client.handle_request(4, 99, DescribeQuorumRequest(), cluster.now)
                 if isinstance(e, Respond)]
    partition = respond.response.topics[0].partitions[0]
    assert partition.error_code == ErrorCode.NONE and partition.leader_id == cluster.leader()
    assert [v.replica_id for v in partition.current_voters] == [1, 2, 3]
    assert [o.replica_id for o in partition.observers] == [4]
    assert all(v.log_end_offset == leader_client.end_offset for v in partition.current_voters)
    follower = cluster.nodes[next(n for n in (1, 2, 3) if n != cluster.leader())].client
    [respond] = [e for e in follower.handle_request(4, 100, DescribeQuorumRequest(), cluster.now)
                 if isinstance(e, Respond)]
    assert respond.response.topics[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_restarted_voter_keeps_its_vote_and_log():
    cluster = quiet()
    leader = elected(cluster)
    commit(cluster, 3)
    follower = min(set(cluster.nodes) - {leader})
    before = cluster.nodes[follower].store.read()
    cluster.crash(follower, 100)
    wait(cluster, lambda: cluster.nodes[follower].client is not None)
    node = cluster.nodes[follower]
    assert node.store.read().epoch == before.epoch and node.store.read().voted_id == before.voted_id
    assert node.log.end_offset >= 4
    commit(cluster, 1)
    assert node.applied == cluster.nodes[leader].applied
