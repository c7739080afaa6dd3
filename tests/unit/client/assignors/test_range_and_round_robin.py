"""Range and round-robin assignments equal kafka-python's for the same group, plus Kafka's own examples."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from aiokafka.coordinator.assignors.range import RangePartitionAssignor as AiokafkaRange
from aiokafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor as AiokafkaRoundRobin
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.coordinator.assignors.range import RangePartitionAssignor
from kafka.coordinator.assignors.roundrobin import RoundRobinPartitionAssignor
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

from gregor.client.assignors import RangeAssignor, RoundRobinAssignor, Subscription, TopicPartition
from gregor.client.assignors.assignor import PartitionAssignor

TOPICS = [f"t{index}" for index in range(6)]


class _Member(NamedTuple):
    """The parts of kafka-python's JoinGroupResponseMember its assignors read."""

    member_id: str
    group_instance_id: str | None
    metadata: ConsumerProtocolSubscription


class _Cluster:
    """Stand-in for kafka-python's ClusterMetadata: partition ids per topic, None when unknown."""

    def __init__(self, partitions_per_topic: Mapping[str, int]) -> None:
        self._partitions_per_topic = partitions_per_topic

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        count = self._partitions_per_topic.get(topic, 0)
        return set(range(count)) if count else None


@st.composite
def groups(draw: st.DrawFn, *, static_members: bool = True,
           same_topics: bool = False) -> tuple[dict[str, int], dict[str, Subscription]]:
    """Partition counts (some topics unknown or empty) and members, possibly some static ones."""
    partitions_per_topic = draw(st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 9)))
    member_ids = draw(st.lists(st.text("abcdefXYZ-0123", min_size=1, max_size=6), min_size=1, max_size=7,
                               unique=True))
    instance_ids = iter(draw(st.lists(st.text("abcdefXYZ-0123", min_size=1, max_size=6),
                                      min_size=len(member_ids), max_size=len(member_ids), unique=True)))
    shared_topics = draw(st.lists(st.sampled_from(TOPICS), unique=True, max_size=len(TOPICS)))
    subscriptions = {}
    for member in member_ids:
        topics = shared_topics if same_topics else draw(
            st.lists(st.sampled_from(TOPICS), unique=True, max_size=len(TOPICS)))
        instance = next(instance_ids) if static_members and draw(st.booleans()) else None
        subscriptions[member] = Subscription(tuple(topics), group_instance_id=instance)
    return partitions_per_topic, subscriptions


def _kafka_python_assignment(assignor: type, partitions_per_topic: Mapping[str, int],
                             subscriptions: Mapping[str, Subscription]) -> dict[str, set[TopicPartition]]:
    # kafka-python groups static and dynamic members with an unsorted itertools.groupby, which is
    # only right when the static members come first; Java sorts them properly, as Gregor does.
    members = sorted(
        (_Member(member, subscription.group_instance_id,
                 ConsumerProtocolSubscription(version=0, topics=list(subscription.topics), user_data=b""))
         for member, subscription in subscriptions.items()),
        key=lambda member: member.group_instance_id is None)
    result = assignor.assign(_Cluster(partitions_per_topic), members)
    return {member: {TopicPartition(topic, partition)
                     for topic, partitions in assignment.assigned_partitions for partition in partitions}
            for member, assignment in result.items()}


def _aiokafka_assignment(assignor: type, partitions_per_topic: Mapping[str, int],
                         subscriptions: Mapping[str, Subscription]) -> dict[str, set[TopicPartition]]:
    members = {member: ConsumerProtocolMemberMetadata(0, list(subscription.topics), b"")
               for member, subscription in subscriptions.items()}
    result = assignor.assign(_Cluster(partitions_per_topic), members)
    return {member: {TopicPartition(topic, partition)
                     for topic, partitions in assignment.assignment for partition in partitions}
            for member, assignment in result.items()}


def _gregor_assignment(assignor: PartitionAssignor, partitions_per_topic: Mapping[str, int],
                       subscriptions: Mapping[str, Subscription]) -> dict[str, set[TopicPartition]]:
    return {member: set(assignment.partitions)
            for member, assignment in assignor.assign(partitions_per_topic, subscriptions).items()}


@settings(max_examples=150)
@given(groups())
def test_range_equals_kafka_python(group: tuple[dict[str, int], dict[str, Subscription]]) -> None:
    partitions_per_topic, subscriptions = group
    assert (_gregor_assignment(RangeAssignor(), partitions_per_topic, subscriptions)
            == _kafka_python_assignment(RangePartitionAssignor, partitions_per_topic, subscriptions))


# kafka-python's round robin crashes when it has to skip a member that does not subscribe to a
# topic (it rebinds member_id to an (instance id, member id) pair), so it is the reference only
# for identical subscriptions; aiokafka's, which knows no static members, covers the rest.
@settings(max_examples=100)
@given(groups(same_topics=True))
def test_round_robin_equals_kafka_python(group: tuple[dict[str, int], dict[str, Subscription]]) -> None:
    partitions_per_topic, subscriptions = group
    assert (_gregor_assignment(RoundRobinAssignor(), partitions_per_topic, subscriptions)
            == _kafka_python_assignment(RoundRobinPartitionAssignor, partitions_per_topic, subscriptions))


@settings(max_examples=150)
@given(groups(static_members=False))
def test_range_and_round_robin_equal_aiokafka(group: tuple[dict[str, int], dict[str, Subscription]]) -> None:
    partitions_per_topic, subscriptions = group
    assert (_gregor_assignment(RangeAssignor(), partitions_per_topic, subscriptions)
            == _aiokafka_assignment(AiokafkaRange, partitions_per_topic, subscriptions))
    assert (_gregor_assignment(RoundRobinAssignor(), partitions_per_topic, subscriptions)
            == _aiokafka_assignment(AiokafkaRoundRobin, partitions_per_topic, subscriptions))


def _partitions(*names: str) -> tuple[TopicPartition, ...]:
    """("t0p1", ...) as topic partitions, in the order the assignors return them."""
    return tuple(TopicPartition(name[:name.index("p")], int(name[name.index("p") + 1:])) for name in names)


def test_range_example_from_kafka_docs() -> None:
    subscriptions = {"C0": Subscription(("t0", "t1")), "C1": Subscription(("t0", "t1"))}
    result = RangeAssignor().assign({"t0": 3, "t1": 3}, subscriptions)
    assert result["C0"].partitions == _partitions("t0p0", "t0p1", "t1p0", "t1p1")
    assert result["C1"].partitions == _partitions("t0p2", "t1p2")


def test_range_orders_static_members_by_instance_id() -> None:
    # After a rolling bounce the member ids sort the other way round; the instance ids still decide.
    subscriptions = {"C3": Subscription(("t0", "t1"), group_instance_id="I0"),
                     "C2": Subscription(("t0", "t1"), group_instance_id="I1")}
    result = RangeAssignor().assign({"t0": 3, "t1": 3}, subscriptions)
    assert result["C3"].partitions == _partitions("t0p0", "t0p1", "t1p0", "t1p1")
    assert result["C2"].partitions == _partitions("t0p2", "t1p2")


def test_round_robin_examples_from_kafka_docs() -> None:
    same = {"C0": Subscription(("t0", "t1")), "C1": Subscription(("t0", "t1"))}
    result = RoundRobinAssignor().assign({"t0": 3, "t1": 3}, same)
    assert result["C0"].partitions == _partitions("t0p0", "t0p2", "t1p1")
    assert result["C1"].partitions == _partitions("t0p1", "t1p0", "t1p2")

    different = {"C0": Subscription(("t0",)), "C1": Subscription(("t0", "t1")),
                 "C2": Subscription(("t0", "t1", "t2"))}
    result = RoundRobinAssignor().assign({"t0": 1, "t1": 2, "t2": 3}, different)
    assert result["C0"].partitions == _partitions("t0p0")
    assert result["C1"].partitions == _partitions("t1p0")
    assert result["C2"].partitions == _partitions("t1p1", "t2p0", "t2p1", "t2p2")


def test_members_are_ordered_by_utf16_code_units_as_in_java() -> None:
    # Java's String.compareTo puts U+10000 (surrogates D800 DC00) before U+FFFF; Python would not.
    subscriptions = {"\uffff": Subscription(("t",)), "\U00010000": Subscription(("t",))}
    assert RangeAssignor().assign({"t": 1}, subscriptions)["\U00010000"].partitions == _partitions("tp0")
    assert RoundRobinAssignor().assign({"t": 1}, subscriptions)["\U00010000"].partitions == _partitions("tp0")


def test_unknown_and_empty_topics_are_skipped_and_every_member_answered() -> None:
    subscriptions = {"a": Subscription(("known", "unknown", "empty")), "b": Subscription(())}
    for assignor in (RangeAssignor(), RoundRobinAssignor()):
        result = assignor.assign({"known": 2, "empty": 0, "unsubscribed": 4}, subscriptions)
        assert result["a"].partitions == _partitions("knownp0", "knownp1")
        assert result["b"].partitions == ()
