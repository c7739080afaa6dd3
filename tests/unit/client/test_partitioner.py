"""Partitioning: murmur2 against Java, kafka-python and librdkafka; sticky, adaptive, round robin."""

from __future__ import annotations

import random
import warnings
from collections import Counter
from typing import Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gregor.client.config import ConfigError
from gregor.client.partitioner import (
    DefaultPartitioner,
    FunctionPartitioner,
    Partitioner,
    RoundRobinPartitioner,
    StickyPartition,
    choose_partition,
    murmur2,
    partition_for_key,
    resolve_partitioner,
    to_positive,
)

with warnings.catch_warnings():  # kafka-python's import warns about importlib.resources
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.partitioner.default import murmur2 as kafka_python_murmur2

# Kafka's UtilsTest.testMurmur2.
JAVA_MURMUR2 = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


class SequentialRandom(random.Random):
    """Draws 0, 1, 2, ... like the SequentialPartitioner of Kafka's BuiltInPartitionerTest."""

    def __init__(self) -> None:
        super().__init__(0)
        self.next_value = 0

    def getrandbits(self, k: int) -> int:
        value = self.next_value
        self.next_value += 1
        return value


@pytest.mark.parametrize("data, expected", JAVA_MURMUR2.items())
def test_murmur2_matches_java(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected
    assert murmur2(bytearray(data)) == murmur2(memoryview(data)) == expected


@given(st.binary(max_size=300))
def test_murmur2_matches_kafka_python(data: bytes) -> None:
    assert murmur2(data) & 0xFFFFFFFF == kafka_python_murmur2(data)
    assert -(2**31) <= murmur2(data) < 2**31


@given(st.binary(max_size=64), st.integers(min_value=1, max_value=10_000))
def test_partition_for_key_is_kafka_pythons_default(key: bytes, num_partitions: int) -> None:
    assert partition_for_key(key, num_partitions) == (kafka_python_murmur2(key) & 0x7FFFFFFF) % num_partitions


def test_to_positive_clears_the_sign_bit() -> None:
    assert to_positive(-(2**31)) == 0
    assert to_positive(-1) == 2**31 - 1
    assert to_positive(5) == 5


def test_partition_for_key_matches_librdkafka_murmur2_random() -> None:
    """librdkafka's in-process mock cluster (loopback only) auto-creates topics with 4 partitions."""
    confluent_kafka = pytest.importorskip("confluent_kafka")
    producer = confluent_kafka.Producer({"test.mock.num.brokers": 1, "partitioner": "murmur2_random",
                                         "linger.ms": 0, "log_level": 0})
    rng = random.Random(480)
    keys = {rng.randbytes(rng.randrange(40)) for _ in range(200)} | set(JAVA_MURMUR2) | {b""}
    placed: dict[bytes, int] = {}
    for key in keys:
        producer.produce("murmur2", key=key, value=b"",
                         on_delivery=lambda error, message: placed.__setitem__(message.key(), message.partition()))
    assert producer.flush(30) == 0
    num_partitions = len(producer.list_topics("murmur2", timeout=10).topics["murmur2"].partitions)
    assert num_partitions > 1
    assert placed == {key: partition_for_key(key, num_partitions) for key in keys}


# -- the default partitioner -----------------------------------------------------------------

def test_keyed_records_hash_over_all_partitions_even_unavailable_ones() -> None:
    partitioner = DefaultPartitioner(16384, random.Random(1))
    for key in JAVA_MURMUR2:
        assert partitioner.partition("t", key, b"v", 7, [0]) == to_positive(JAVA_MURMUR2[key]) % 7


def test_ignore_keys_makes_keyed_records_sticky() -> None:
    partitioner = DefaultPartitioner(100, SequentialRandom(), ignore_keys=True)
    chosen = {partitioner.partition("t", key, None, 8, range(8)) for key in JAVA_MURMUR2}
    assert chosen == {0}
    assert not partitioner.uses_key(b"k")


def test_sticky_partition_changes_after_batch_size_bytes() -> None:
    partitioner = DefaultPartitioner(3, SequentialRandom())
    available = [0, 1, 2]
    seen = []
    for _ in range(9):
        seen.append(partitioner.partition("a", None, b"x", 3, available))
        partitioner.record_appended("a", None, 1, 3, available)
    assert seen == [0, 0, 0, 1, 1, 1, 2, 2, 2]


def test_keyed_appends_do_not_move_the_sticky_partition() -> None:
    partitioner = DefaultPartitioner(2, SequentialRandom())
    first = partitioner.partition("a", None, b"x", 4, range(4))
    for _ in range(10):
        partitioner.record_appended("a", b"key", 100, 4, range(4))
    assert partitioner.partition("a", None, b"x", 4, range(4)) == first


def test_topics_stick_independently() -> None:
    partitioner = DefaultPartitioner(1, SequentialRandom())
    assert partitioner.partition("a", None, None, 5, range(5)) == 0
    assert partitioner.partition("b", None, None, 5, range(5)) == 1
    partitioner.record_appended("a", None, 1, 5, range(5))
    assert partitioner.partition("a", None, None, 5, range(5)) == 2
    assert partitioner.partition("b", None, None, 5, range(5)) == 1


def test_switch_waits_for_a_full_batch_up_to_twice_the_batch_size() -> None:
    sticky = StickyPartition(10, SequentialRandom())
    assert sticky.partition(4, range(4)) == 0
    sticky.record_appended(12, 4, range(4), enable_switch=False)
    assert sticky.partition(4, range(4)) == 0
    sticky.record_appended(0, 4, range(4), enable_switch=True)
    assert sticky.partition(4, range(4)) == 1
    sticky.record_appended(19, 4, range(4), enable_switch=False)
    assert sticky.partition(4, range(4)) == 1
    sticky.record_appended(1, 4, range(4), enable_switch=False)
    assert sticky.partition(4, range(4)) == 2


def test_sticky_draws_only_available_partitions() -> None:
    """Kafka's BuiltInPartitionerTest.unavailablePartitionsTest, with a seeded random source."""
    sticky = StickyPartition(1, random.Random(7))
    drawn = set()
    for _ in range(100):
        drawn.add(sticky.partition(3, [0, 2]))
        sticky.record_appended(1, 3, [0, 2])
    assert drawn == {0, 2}
    only_one = StickyPartition(1, random.Random(7))
    for _ in range(20):
        assert only_one.partition(2, [1]) == 1
        only_one.record_appended(1, 2, [1])
    none_available = StickyPartition(1, random.Random(7))
    assert none_available.partition(1, []) == 0
    none_available.record_appended(1, 1, [])
    assert none_available.partition(1, []) == 0


def test_sticky_partition_is_redrawn_when_the_topic_shrinks() -> None:
    sticky = StickyPartition(100, SequentialRandom())
    assert sticky.partition(8, range(8)) == 0
    sticky.record_appended(100, 8, range(8))
    sticky.record_appended(100, 8, range(8))
    assert sticky.partition(8, range(8)) == 2
    assert sticky.partition(2, range(2)) == 3 % 2


def test_sticky_batch_size_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        StickyPartition(0, random.Random(0))
    assert DefaultPartitioner(0, random.Random(0)).sticky_batch_size == 1


def test_adaptive_draws_are_reciprocal_to_queue_sizes() -> None:
    """Kafka's BuiltInPartitionerTest.adaptivePartitionsTest."""
    partitioner = DefaultPartitioner(1, SequentialRandom())
    queue_sizes = {0: 5, 1: 0, 2: 3, 3: 0, 4: 1}
    partitioner.update_load_stats("a", queue_sizes)
    range_end = sum(6 - size for size in queue_sizes.values())
    counts = Counter()
    for _ in range(2 * range_end):
        partition = partitioner.partition("a", None, None, 5, range(5))
        counts[partition] += 1
        partitioner.record_appended("a", None, 1, 5, range(5))
    assert counts == {partition: 2 * (6 - size) for partition, size in queue_sizes.items()}


@pytest.mark.parametrize("queue_sizes, excluded, expected", [
    ({0: 2, 1: 2, 2: 2}, 0, [0, 1, 2, 3]),  # equal queues: uniform over the available partitions
    ({5: 9}, 0, [0, 1, 2, 3]),  # one partition with a leader: uniform
    ({5: 9}, 1, [5, 5, 5, 5]),  # the other one excluded for latency: weighted, only 5 left
    ({4: 1, 6: 1}, 1, [4, 6, 4, 6]),  # equal queues but one excluded: weighted over the rest
    (None, 0, [0, 1, 2, 3]),
])
def test_adaptive_stats_and_their_uniform_cases(queue_sizes: dict[int, int] | None, excluded: int,
                                                expected: list[int]) -> None:
    sticky = StickyPartition(1, SequentialRandom())
    sticky.update_load_stats(queue_sizes, excluded)
    assert [_draw(sticky, 8, range(8)) for _ in range(4)] == expected


def test_adaptive_off_ignores_load_stats() -> None:
    partitioner = DefaultPartitioner(1, SequentialRandom(), adaptive=False)
    partitioner.update_load_stats("a", {0: 100, 1: 0})
    assert [_place(partitioner, 2) for _ in range(4)] == [0, 1, 0, 1]


def _draw(sticky: StickyPartition, num_partitions: int, available: Sequence[int]) -> int:
    partition = sticky.partition(num_partitions, available)
    sticky.record_appended(1, num_partitions, available)
    return partition


def _place(partitioner: DefaultPartitioner, num_partitions: int) -> int:
    partition = partitioner.partition("a", None, None, num_partitions, range(num_partitions))
    partitioner.record_appended("a", None, 1, num_partitions, range(num_partitions))
    return partition


# -- round robin, custom partitioners, choosing ------------------------------------------------

def test_round_robin_cycles_available_partitions_per_topic() -> None:
    partitioner = RoundRobinPartitioner()
    assert [partitioner.partition("a", b"k", None, 5, [1, 3, 4]) for _ in range(5)] == [1, 3, 4, 1, 3]
    assert [partitioner.partition("b", None, None, 2, []) for _ in range(3)] == [0, 1, 0]


def test_choose_partition_explicit_wins_and_is_range_checked() -> None:
    partitioner = DefaultPartitioner(16384, random.Random(0))
    assert choose_partition(partitioner, "t", 2, b"21", None, 3, [0]) == 2
    assert choose_partition(partitioner, "t", None, b"21", None, 3, [0]) == partition_for_key(b"21", 3)
    with pytest.raises(ValueError, match="the record gave partition 3 of topic 't', which has partitions 0 to 2"):
        choose_partition(partitioner, "t", 3, None, None, 3, [0])
    with pytest.raises(ValueError, match="partitioner FunctionPartitioner gave partition -1"):
        choose_partition(FunctionPartitioner(lambda *args: -1), "t", None, None, None, 3, [0])


class OnlyPartition:
    def partition(self, topic: str, key_bytes: bytes | None, value_bytes: bytes | None,
                  num_partitions: int, available_partitions: Sequence[int]) -> int:
        return num_partitions - 1


class Complete(OnlyPartition):
    closed = False

    def on_new_batch(self, topic: str, prev_partition: int) -> None:
        """Not needed here."""

    def close(self) -> None:
        self.closed = True


def last_partition(topic: str, key_bytes: bytes | None, value_bytes: bytes | None,
                   num_partitions: int, available_partitions: Sequence[int]) -> int:
    return num_partitions - 1


def resolve(value: object, **overrides: object) -> Partitioner:
    settings: dict = {"batch_size": 16384, "ignore_keys": False, "adaptive": True,
                      "rng": random.Random(0), **overrides}
    return resolve_partitioner(value, **settings)


def test_resolve_builtins_and_java_names() -> None:
    assert isinstance(resolve(None), DefaultPartitioner)
    assert resolve(None, ignore_keys=True).ignore_keys is True
    assert isinstance(resolve("default"), DefaultPartitioner)
    assert isinstance(resolve("org.apache.kafka.clients.producer.RoundRobinPartitioner"), RoundRobinPartitioner)
    uniform = resolve("org.apache.kafka.clients.producer.UniformStickyPartitioner")
    assert isinstance(uniform, DefaultPartitioner) and uniform.ignore_keys
    legacy = resolve("org.apache.kafka.clients.producer.internals.DefaultPartitioner", batch_size=5)
    assert isinstance(legacy, DefaultPartitioner) and legacy.sticky_batch_size == 5


def test_resolve_custom_partitioners() -> None:
    complete = Complete()
    assert resolve(complete) is complete
    assert isinstance(resolve(Complete), Complete)
    partial = resolve(OnlyPartition)
    assert isinstance(partial, Partitioner) and partial.partition("t", None, None, 4, []) == 3
    partial.on_new_batch("t", 1)
    partial.close()
    wrapped = resolve(last_partition)
    assert isinstance(wrapped, FunctionPartitioner) and wrapped.partition("t", None, None, 6, []) == 5
    imported = resolve(f"{__name__}:last_partition")
    assert imported.partition("t", None, None, 2, []) == 1
    assert isinstance(resolve(f"{__name__}:Complete"), Complete)


def test_resolve_refuses_what_cannot_partition() -> None:
    with pytest.raises(ConfigError, match="partitioner.class: class int has no partition\\(\\) method"):
        resolve(int)
    with pytest.raises(ConfigError, match="partitioner.class: 42 is neither a partitioner nor a function"):
        resolve(42)
    with pytest.raises(ConfigError, match="partitioner.class: cannot import 'nowhere:Nothing'"):
        resolve("nowhere:Nothing")
