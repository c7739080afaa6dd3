"""Choosing a record's partition, as the Java client 3.x does.

`choose_partition` is the producer's single entry: an explicit partition wins; otherwise the
configured partitioner decides. The built-in `DefaultPartitioner` is the Java client's default
(KafkaProducer.partition plus the accumulator's BuiltInPartitioner, KIP-794):

- a record with a key goes to ``to_positive(murmur2(key)) % num_partitions``, counting all
  partitions, available or not, so a key always lands on the same partition (unless
  ``partitioner.ignore.keys``);
- a record without a key goes to the topic's *sticky* partition, which changes once
  ``batch.size`` bytes have been appended to it (or twice that while its last batch is not yet
  full). The next sticky partition is drawn at random among the available partitions (all
  partitions if none is available) and may, as in Java, be the same one again. With adaptive
  partitioning the draw is weighted towards partitions with shorter queues, from the queue
  sizes the accumulator reports (`DefaultPartitioner.update_load_stats`).

The producer reports each append of a record this partitioner placed with
`DefaultPartitioner.record_appended`; that is what moves the sticky partition on. Randomness
comes from an injected `random.Random`, so a seeded producer is reproducible.

A custom partitioner is a callable ``(topic, key_bytes, value_bytes, num_partitions,
available_partitions) -> int`` or an object with ``partition`` of that signature and,
optionally, ``on_new_batch(topic, prev_partition)`` and ``close()``.
"""

from __future__ import annotations

import bisect
import random
import struct
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable

from gregor.client.config import ConfigError, import_object

_M = 0x5BD1E995
_SEED = 0x9747B28C
_MASK32 = 0xFFFFFFFF
_WORDS = struct.Struct("<I")


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Kafka's Utils.murmur2: 32-bit MurmurHash2, seed 0x9747b28c, as a signed Java int."""
    length = len(data)
    h = (_SEED ^ length) & _MASK32
    body = length & ~3
    for (k,) in _WORDS.iter_unpack(data[:body]):
        k = (k * _M) & _MASK32
        k ^= k >> 24
        k = (k * _M) & _MASK32
        h = ((h * _M) & _MASK32) ^ k
    tail = length & 3
    if tail == 3:
        h ^= data[body + 2] << 16
    if tail >= 2:
        h ^= data[body + 1] << 8
    if tail >= 1:
        h = ((h ^ data[body]) * _M) & _MASK32
    h ^= h >> 13
    h = (h * _M) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(number: int) -> int:
    """Kafka's Utils.toPositive: clear the sign bit of a Java int (not abs: abs(MIN_VALUE) < 0)."""
    return number & 0x7FFFFFFF


def partition_for_key(key_bytes: bytes | bytearray | memoryview, num_partitions: int) -> int:
    """The partition of a keyed record under Kafka's default partitioner."""
    return to_positive(murmur2(key_bytes)) % num_partitions


@runtime_checkable
class Partitioner(Protocol):
    """What the producer calls to place a record that names no partition."""

    def partition(self, topic: str, key_bytes: bytes | None, value_bytes: bytes | None,
                  num_partitions: int, available_partitions: Sequence[int]) -> int: ...

    def on_new_batch(self, topic: str, prev_partition: int) -> None: ...

    def close(self) -> None: ...


PartitionerFunction = Callable[[str, bytes | None, bytes | None, int, Sequence[int]], int]


class FunctionPartitioner:
    """A plain function used as a partitioner."""

    def __init__(self, function: PartitionerFunction) -> None:
        self.function = function

    def partition(self, topic: str, key_bytes: bytes | None, value_bytes: bytes | None,
                  num_partitions: int, available_partitions: Sequence[int]) -> int:
        return self.function(topic, key_bytes, value_bytes, num_partitions, available_partitions)

    def on_new_batch(self, topic: str, prev_partition: int) -> None:
        """A function has no state to move on."""

    def close(self) -> None:
        """A function holds nothing to release."""


class RoundRobinPartitioner:
    """Java's RoundRobinPartitioner: each topic cycles through its available partitions
    (all partitions when none is available), keys ignored."""

    def __init__(self) -> None:
        self._counters: dict[str, int] = {}

    def partition(self, topic: str, key_bytes: bytes | None, value_bytes: bytes | None,
                  num_partitions: int, available_partitions: Sequence[int]) -> int:
        count = self._counters.get(topic, 0)
        self._counters[topic] = count + 1
        if available_partitions:
            return available_partitions[to_positive(count) % len(available_partitions)]
        return to_positive(count) % num_partitions

    def on_new_batch(self, topic: str, prev_partition: int) -> None:
        """Round robin does not depend on batches."""

    def close(self) -> None:
        """Nothing to release."""


@dataclass
class _LoadStats:
    """Cumulative frequency table: partition_ids[i] is drawn for a number below cumulative[i]."""

    cumulative: list[int]
    partition_ids: list[int]


class StickyPartition:
    """One topic's sticky choice for records without a key (Java's BuiltInPartitioner)."""

    __slots__ = ("sticky_batch_size", "forced_switch_bytes", "_rng", "current", "produced_bytes", "_load_stats")

    def __init__(self, sticky_batch_size: int, rng: random.Random) -> None:
        if sticky_batch_size < 1:
            raise ValueError(f"sticky_batch_size must be at least 1, not {sticky_batch_size}")
        self.sticky_batch_size = sticky_batch_size
        self.forced_switch_bytes = 2 * sticky_batch_size  # moves on at this even while its batch is open
        self._rng = rng
        self.current: int | None = None  # read (and produced_bytes kept) by the producer's send path
        self.produced_bytes = 0
        self._load_stats: _LoadStats | None = None

    def partition(self, num_partitions: int, available_partitions: Sequence[int]) -> int:
        """The current sticky partition, chosen now if there is none yet."""
        # A topic re-created with fewer partitions must not keep a partition it no longer has.
        if self.current is None or self.current >= num_partitions:
            self._switch(num_partitions, available_partitions)
        assert self.current is not None
        return self.current

    def record_appended(self, appended_bytes: int, num_partitions: int,
                        available_partitions: Sequence[int], *, enable_switch: bool = True) -> None:
        """Count bytes appended to the sticky partition and move on once enough went there.

        `enable_switch` is False while the partition's last batch is not full: switching then
        would leave a small batch behind, so the switch waits, up to twice the batch size.
        """
        self.produced_bytes += appended_bytes
        enough = self.produced_bytes >= self.sticky_batch_size
        if (enough and enable_switch) or self.produced_bytes >= self.forced_switch_bytes:
            self._switch(num_partitions, available_partitions)

    def update_load_stats(self, queue_sizes: Mapping[int, int] | None, excluded: int = 0) -> None:
        """Weight the next draws by queue length (adaptive partitioning, KIP-794).

        `queue_sizes` maps each partition that has a leader and was not excluded to the number
        of batches queued for it, in partition order; `excluded` counts partitions with a leader
        left out for answering too slowly (partitioner.availability.timeout.ms). None, fewer
        than two partitions with a leader, or equal queues with none excluded: uniform draws.
        """
        if not queue_sizes or len(queue_sizes) + excluded < 2:
            self._load_stats = None
            return
        sizes = list(queue_sizes.values())
        if excluded == 0 and len(set(sizes)) == 1:
            self._load_stats = None
            return
        most_plus_one = max(sizes) + 1
        cumulative, total = [], 0
        for size in sizes:
            total += most_plus_one - size
            cumulative.append(total)
        self._load_stats = _LoadStats(cumulative, list(queue_sizes))

    def _switch(self, num_partitions: int, available_partitions: Sequence[int]) -> None:
        draw = self._rng.getrandbits(31)  # Utils.toPositive(ThreadLocalRandom.nextInt())
        stats = self._load_stats
        if stats is not None:
            index = bisect.bisect_right(stats.cumulative, draw % stats.cumulative[-1])
            self.current = stats.partition_ids[index]
        elif available_partitions:
            self.current = available_partitions[draw % len(available_partitions)]
        else:
            self.current = draw % num_partitions
        self.produced_bytes = 0


class DefaultPartitioner:
    """Kafka's default: keyed records by murmur2 of the key, the others sticky per topic."""

    def __init__(self, batch_size: int, rng: random.Random, *, ignore_keys: bool = False,
                 adaptive: bool = True) -> None:
        self.sticky_batch_size = max(batch_size, 1)
        self.ignore_keys = ignore_keys
        self.adaptive = adaptive
        self._rng = rng
        self._sticky: dict[str, StickyPartition] = {}

    def uses_key(self, key_bytes: bytes | None) -> bool:
        """Whether the key, not the sticky partition, places this record."""
        return key_bytes is not None and not self.ignore_keys

    def partition(self, topic: str, key_bytes: bytes | None, value_bytes: bytes | None,
                  num_partitions: int, available_partitions: Sequence[int]) -> int:
        if self.uses_key(key_bytes):
            return partition_for_key(key_bytes, num_partitions)
        return self.sticky_for(topic).partition(num_partitions, available_partitions)

    def record_appended(self, topic: str, key_bytes: bytes | None, appended_bytes: int,
                        num_partitions: int, available_partitions: Sequence[int], *,
                        enable_switch: bool = True) -> None:
        """Tell the sticky logic that a record it placed was appended (Java's
        updatePartitionInfo); keyed records do not count. `enable_switch`: the partition's
        last batch is full. Call it with 0 bytes to complete a switch that was held back."""
        if not self.uses_key(key_bytes):
            self.sticky_for(topic).record_appended(appended_bytes, num_partitions,
                                                    available_partitions, enable_switch=enable_switch)

    def update_load_stats(self, topic: str, queue_sizes: Mapping[int, int] | None,
                          excluded: int = 0) -> None:
        """Adaptive partitioning input from the accumulator; ignored when not adaptive."""
        if self.adaptive:
            self.sticky_for(topic).update_load_stats(queue_sizes, excluded)

    def on_new_batch(self, topic: str, prev_partition: int) -> None:
        """Batches are tracked through record_appended instead (KIP-794)."""

    def close(self) -> None:
        """Nothing to release."""

    def sticky_for(self, topic: str) -> StickyPartition:
        """The topic's sticky state; a producer may hold on to it to place keyless records
        without going through `partition` and `record_appended` for each one."""
        if topic not in self._sticky:
            self._sticky[topic] = StickyPartition(self.sticky_batch_size, self._rng)
        return self._sticky[topic]


def choose_partition(partitioner: Partitioner, topic: str, partition: int | None,
                     key_bytes: bytes | None, value_bytes: bytes | None, num_partitions: int,
                     available_partitions: Sequence[int]) -> int:
    """The record's partition: the explicit one if given, else the partitioner's.

    Raises ValueError for a partition outside [0, num_partitions), naming who chose it.
    """
    chosen_by = "the record"
    if partition is None:
        chosen_by = f"partitioner {type(partitioner).__name__}"
        partition = partitioner.partition(topic, key_bytes, value_bytes, num_partitions,
                                          available_partitions)
    if not isinstance(partition, int) or not 0 <= partition < num_partitions:
        raise ValueError(f"{chosen_by} gave partition {partition!r} of topic {topic!r}, which has "
                         f"partitions 0 to {num_partitions - 1}")
    return partition


_JAVA_PARTITIONERS = {
    "org.apache.kafka.clients.producer.RoundRobinPartitioner": "round_robin",
    "org.apache.kafka.clients.producer.internals.DefaultPartitioner": "default",
    "org.apache.kafka.clients.producer.UniformStickyPartitioner": "uniform_sticky",
}


def resolve_partitioner(value: Any, *, batch_size: int, ignore_keys: bool, adaptive: bool,
                        rng: random.Random, key: str = "partitioner.class") -> Partitioner:
    """Turn a ``partitioner.class`` setting into a partitioner.

    None or "default" is the built-in; "round_robin" and "uniform_sticky" (sticky even for keyed
    records) and the Java class names of those are known; other strings are import paths. A
    class is instantiated without arguments, an object with ``partition`` is used as it is and
    another callable is wrapped as a function partitioner.
    """
    if isinstance(value, str):
        name = _JAVA_PARTITIONERS.get(value, value)
        if name in ("default", "uniform_sticky"):
            return DefaultPartitioner(batch_size, rng, ignore_keys=ignore_keys or name == "uniform_sticky",
                                      adaptive=adaptive)
        if name == "round_robin":
            return RoundRobinPartitioner()
        value = import_object(value, key)
    if value is None:
        return DefaultPartitioner(batch_size, rng, ignore_keys=ignore_keys, adaptive=adaptive)
    if isinstance(value, type):
        if not callable(getattr(value, "partition", None)):
            raise ConfigError(f"{key}: class {value.__qualname__} has no partition() method")
        value = value()
    if callable(getattr(value, "partition", None)):
        return value if isinstance(value, Partitioner) else _PartialPartitioner(value)
    if callable(value):
        return FunctionPartitioner(value)
    raise ConfigError(f"{key}: {value!r} is neither a partitioner nor a function")


class _PartialPartitioner:
    """A user's partitioner lacking on_new_batch or close, given no-op ones."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def partition(self, topic: str, key_bytes: bytes | None, value_bytes: bytes | None,
                  num_partitions: int, available_partitions: Sequence[int]) -> int:
        return self.inner.partition(topic, key_bytes, value_bytes, num_partitions, available_partitions)

    def on_new_batch(self, topic: str, prev_partition: int) -> None:
        if hasattr(self.inner, "on_new_batch"):
            self.inner.on_new_batch(topic, prev_partition)

    def close(self) -> None:
        if hasattr(self.inner, "close"):
            self.inner.close()
