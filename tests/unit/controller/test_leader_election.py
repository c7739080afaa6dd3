"""ElectLeaders (preferred and unclean) and the automatic leader rebalance, decided on real
metadata images."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from gregor.broker.leader_rebalance import LeaderRebalance
from gregor.controller.leader_balance import leader_imbalance, rebalance_leaders
from gregor.controller.operations import ControllerResult
from gregor.controller.reassignment import alter_reassignments
from gregor.controller.replication_control import ElectionType, elect_leaders
from gregor.metadata.image import MetadataImage
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages.metadata_records.partition_record import PartitionRecord
from gregor.protocol.messages.metadata_records.register_broker_record import RegisterBrokerRecord
from gregor.protocol.messages.metadata_records.topic_record import TopicRecord
from gregor.protocol.messages.metadata_records.unfence_broker_record import UnfenceBrokerRecord

from tests.unit.controller.images import CLEAN, cluster, partition, replay

PREFERRED, UNCLEAN = ElectionType.PREFERRED, ElectionType.UNCLEAN


def spread(assignments, leaders, isrs=None, live=(1, 2, 3)) -> MetadataImage:
    """Brokers 1-3 and topic `s` with one partition per assignment, led as given."""
    records: list = []
    for broker in (1, 2, 3):
        records.append(RegisterBrokerRecord(broker_id=broker, incarnation_id=uuid.UUID(int=broker), broker_epoch=5))
        if broker in live:
            records.append(UnfenceBrokerRecord(id=broker, epoch=5))
    topic_id = uuid.UUID(int=11)
    records.append(TopicRecord(name="s", topic_id=topic_id))
    for index, (replicas, leader) in enumerate(zip(assignments, leaders)):
        isr = list(replicas if isrs is None else isrs[index])
        records.append(PartitionRecord(partition_id=index, topic_id=topic_id, replicas=list(replicas), isr=isr,
                                       leader=leader, leader_epoch=1, partition_epoch=1))
    return replay(MetadataImage(), records)


def leaders(image) -> list[int]:
    return [p.leader for _, p in sorted(image.topics["s"].partitions.items())]


# -- ElectLeaders


def test_preferred_election_per_partition():
    image = cluster(leader=2)
    results, records = elect_leaders(image, PREFERRED, [("t", [0, 3]), ("nope", [0])])
    assert results == [("t", [(0, ErrorCode.NONE), (3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
                       ("nope", [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)])]
    moved = replay(image, records)
    assert (partition(moved).leader, partition(moved).leader_epoch) == (1, 4)
    assert elect_leaders(moved, PREFERRED, [("t", [0])]) == ([("t", [(0, ErrorCode.ELECTION_NOT_NEEDED)])], [])
    out_of_isr = cluster(isr=(2, 3), leader=2)
    assert elect_leaders(out_of_isr, PREFERRED, [("t", [0])])[0] == [
        ("t", [(0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)])]
    fenced = cluster(leader=2, live=(2, 3, 4))
    assert elect_leaders(fenced, PREFERRED, [("t", [0])])[0] == [("t", [(0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)])]


def test_a_partition_named_twice_is_elected_once():
    results, records = elect_leaders(cluster(leader=2), PREFERRED, [("t", [0, 0])])
    assert results == [("t", [(0, ErrorCode.NONE), (0, ErrorCode.NONE)])] and len(records) == 1


def test_all_partitions_leaves_out_those_that_need_no_election():
    image = spread([(1, 2, 3), (2, 3, 1), (3, 1, 2)], [2, 2, 3])
    results, records = elect_leaders(image, PREFERRED, None)
    assert results == [("s", [(0, ErrorCode.NONE)])]
    assert leaders(replay(image, records)) == [1, 2, 3]
    assert elect_leaders(cluster(), PREFERRED, None) == ([("t", [])], [])


def test_unclean_election_only_for_leaderless_partitions_and_only_with_a_live_replica():
    assert elect_leaders(cluster(), UNCLEAN, [("t", [0])])[0] == [("t", [(0, ErrorCode.ELECTION_NOT_NEEDED)])]
    offline = cluster(isr=(1,), leader=-1, live=(2, 3, 4))
    results, records = elect_leaders(offline, UNCLEAN, [("t", [0])])
    assert results == [("t", [(0, ErrorCode.NONE)])]
    after = partition(replay(offline, records))
    assert (after.leader, after.isr) == (2, (2,))
    dead = cluster(isr=(1,), leader=-1, live=(4,))
    assert elect_leaders(dead, UNCLEAN, [("t", [0])]) == ([("t", [(0, ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE)])], [])
    assert elect_leaders(dead, PREFERRED, [("t", [0])])[0] == [("t", [(0, ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE)])]


def test_unclean_election_prefers_an_isr_member():
    image = cluster(isr=(3,), leader=-1)
    results, records = elect_leaders(image, UNCLEAN, [("t", [0])])
    assert results == [("t", [(0, ErrorCode.NONE)])] and partition(replay(image, records)).leader == 3


# -- automatic rebalance


def test_imbalance_is_per_preferred_broker():
    image = spread([(1, 2), (1, 3), (2, 1), (3, 1)], [2, 1, 2, 3])
    assert leader_imbalance(image) == {1: 0.5, 2: 0.0, 3: 0.0}


@pytest.mark.parametrize("elsewhere, percentage, moved", [(1, 10, 0), (2, 10, 2), (1, 0, 1), (3, 50, 0)])
def test_rebalance_moves_leaders_only_above_the_percentage(elsewhere, percentage, moved):
    # broker 1 is the preferred replica of ten partitions, `elsewhere` of them led by broker 2
    image = spread([(1, 2)] * 10, [2] * elsewhere + [1] * (10 - elsewhere))
    assert len(rebalance_leaders(image, percentage)) == moved
    if moved:
        assert leaders(replay(image, rebalance_leaders(image, percentage))) == [1] * 10


def test_rebalance_skips_preferred_replicas_out_of_the_isr_and_partitions_being_reassigned():
    image = spread([(1, 2), (1, 2), (1, 2, 3)], [2, 2, 1], isrs=[(1, 2), (2,), (1, 2, 3)])
    assert leaders(replay(image, rebalance_leaders(image, 10))) == [1, 2, 1]  # p1: 1 not in sync
    _, records = alter_reassignments(image, [("s", 0, [1, 2, 3])], CLEAN)
    reassigning = replay(image, records)
    assert partition_of(reassigning, 0).adding_replicas == (3,)
    assert leaders(replay(reassigning, rebalance_leaders(reassigning, 10))) == [2, 2, 1]


def partition_of(image, index):
    return image.topics["s"].partitions[index]


class _Config(dict):
    get = dict.__getitem__


class _Server:
    def __init__(self, image) -> None:
        self.image = image
        self.committed: list = []

    async def submit(self, operation):
        result: ControllerResult = operation()
        self.committed.extend(result.records)
        self.image = replay(self.image, result.records)
        return result.response


def test_the_rebalance_step_runs_once_per_interval_and_not_when_disabled():
    config = _Config({"auto.leader.rebalance.enable": True, "leader.imbalance.check.interval.seconds": 300,
                      "leader.imbalance.per.broker.percentage": 10})
    server = _Server(spread([(1, 2), (2, 1)], [2, 2]))
    rebalance = LeaderRebalance(config)

    async def run(now_ms: int) -> int:
        return await rebalance.run_if_due(server, now_ms)
    assert asyncio.run(run(1_000)) == 0  # the first check is one interval after start
    assert asyncio.run(run(300_999)) == 0
    assert asyncio.run(run(301_000)) == 1 and leaders(server.image) == [1, 2]
    assert asyncio.run(run(301_250)) == 0
    disabled = LeaderRebalance(_Config(config, **{"auto.leader.rebalance.enable": False}))
    assert asyncio.run(disabled.run_if_due(_Server(spread([(1, 2)], [2])), 10**12)) == 0
