"""The asyncio admin client: the sync AdminClient's operations, awaited on the caller's loop.

Every operation is the same `AdminOperations` coroutine the sync client runs on its network
thread (routing, batching, retries, coordinator lookups), so results and errors are identical;
`timeout` (seconds, default `default.api.timeout.ms`) bounds each call, retries included.
Cancelling a call cancels its wait: requests already written are answered and dropped, and the
connection stays usable.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any, Awaitable, Callable, Iterable, Mapping, Sequence, TypeVar

from gregor.client.admin import (
    AdminOperations, AlterConfigOp, ClusterDescription, ConfigEntry, ConfigResource, ConsumerGroupDescription,
    ConsumerGroupListing, CreatedTopic, DeletedRecords, ElectionType, IsolationLevel, ListedOffset,
    LogDirDescription, NewTopic, OffsetAndMetadata, OffsetSpec, PartitionReassignment, QuorumInfo,
    TopicDescription, TopicListing, refuse_duplicates,
)
from gregor.client.aio.binding import LoopBinding, check_timeout
from gregor.client.config import Role, parse_config
from gregor.client.consumer.base import partitions_arg
from gregor.client.errors import ClientErrorCode, KafkaException
from gregor.client.network import ByPartition, NetworkClient, NetworkSettings, TopicPartition
from gregor.client.transactions import TransactionDescription, TransactionListing

_CLIENT_NUMBERS = itertools.count(1)
T = TypeVar("T")


class AdminClient:
    """Administrative operations against any Kafka-compatible cluster, for asyncio code."""

    def __init__(self, config: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        """Kafka's admin keys in `config` and/or as keyword arguments with underscores."""
        parsed = parse_config(Role.ADMIN, config, **kwargs)
        self.client_id = parsed["client.id"] or f"adminclient-aio-{next(_CLIENT_NUMBERS)}"
        self._default_timeout = parsed["default.api.timeout.ms"] / 1000
        self._network = NetworkClient(NetworkSettings.from_config({**parsed, "client.id": self.client_id}))
        self._operations = AdminOperations(self._network, parsed["retries"])
        self._binding = LoopBinding("admin client")
        self._closed = False

    async def start(self) -> None:
        """Start the metadata task on the running loop (the first call does it too)."""
        self._ready()

    def _ready(self) -> None:
        if self._closed:
            raise KafkaException(ClientErrorCode._STATE, "the admin client is closed")
        if self._binding.bind():
            self._network.start()

    async def close(self) -> None:
        """Close connections; calls still pending fail with _DESTROY. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if self._binding.loop is not None:
            await self._network.close()

    async def __aenter__(self) -> AdminClient:
        await self.start()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<AdminClient {self.client_id}{' closed' if self._closed else ''}>"

    async def _call(self, operation: Callable[[float], Awaitable[T]], timeout: float | None) -> T:
        self._ready()
        seconds = check_timeout(timeout)
        seconds = self._default_timeout if seconds is None else seconds
        return await operation(asyncio.get_running_loop().time() + seconds)

    # topics

    async def create_topics(self, new_topics: Iterable[NewTopic], validate_only: bool = False,
                            timeout: float | None = None) -> dict[str, CreatedTopic | KafkaException]:
        """Create topics (or with `validate_only` only check that they could be created)."""
        topics = _items(new_topics, "new_topics", NewTopic)
        refuse_duplicates(topic.name for topic in topics)
        return await self._call(lambda deadline: self._operations.create_topics(topics, validate_only, deadline),
                                timeout)

    async def delete_topics(self, topics: Iterable[str], timeout: float | None = None,
                            ) -> dict[str, KafkaException | None]:
        names = _items(topics, "topics", str)
        return await self._call(lambda deadline: self._operations.delete_topics(names, deadline), timeout)

    async def list_topics(self, internal: bool = False, timeout: float | None = None) -> dict[str, TopicListing]:
        """Every topic of the cluster by name; internal topics only when asked for."""
        return await self._call(lambda deadline: self._operations.list_topics(internal, deadline), timeout)

    async def describe_topics(self, topics: Iterable[str], timeout: float | None = None,
                              ) -> dict[str, TopicDescription | KafkaException]:
        names = _items(topics, "topics", str)
        return await self._call(lambda deadline: self._operations.describe_topics(names, deadline), timeout)

    async def create_partitions(self, new_totals: Mapping[str, int], validate_only: bool = False,
                                timeout: float | None = None) -> dict[str, KafkaException | None]:
        """Grow each topic to the given total number of partitions."""
        totals = dict(_mapping(new_totals, "new_totals"))
        return await self._call(
            lambda deadline: self._operations.create_partitions(totals, validate_only, deadline), timeout)

    # configs

    async def describe_configs(self, resources: Iterable[ConfigResource], include_synonyms: bool = False,
                               timeout: float | None = None,
                               ) -> dict[ConfigResource, dict[str, ConfigEntry] | KafkaException]:
        wanted = list(dict.fromkeys(_items(resources, "resources", ConfigResource)))
        return await self._call(
            lambda deadline: self._operations.describe_configs(wanted, include_synonyms, deadline), timeout)

    async def alter_configs(self, configs: Mapping[ConfigResource, Mapping[str, str | None]],
                            validate_only: bool = False, timeout: float | None = None,
                            ) -> dict[ConfigResource, KafkaException | None]:
        """Replace the whole dynamic config of each resource (Kafka's legacy AlterConfigs)."""
        changes = {resource: dict(values) for resource, values in _mapping(configs, "configs").items()}
        return await self._call(
            lambda deadline: self._operations.alter_configs(changes, validate_only, deadline), timeout)

    async def incremental_alter_configs(self, changes: Mapping[ConfigResource, Iterable[AlterConfigOp]],
                                        validate_only: bool = False, timeout: float | None = None,
                                        ) -> dict[ConfigResource, KafkaException | None]:
        """Set, delete, append to or subtract from single config keys of each resource."""
        operations = {resource: list(ops) for resource, ops in _mapping(changes, "changes").items()}
        return await self._call(
            lambda deadline: self._operations.incremental_alter_configs(operations, validate_only, deadline),
            timeout)

    # cluster

    async def describe_cluster(self, timeout: float | None = None) -> ClusterDescription:
        return await self._call(self._operations.describe_cluster, timeout)

    async def describe_metadata_quorum(self, timeout: float | None = None) -> QuorumInfo:
        """The KRaft metadata quorum (DescribeQuorum)."""
        return await self._call(self._operations.describe_metadata_quorum, timeout)

    # consumer groups and their offsets

    async def list_consumer_groups(self, states: Iterable[str] | None = None,
                                   timeout: float | None = None) -> list[ConsumerGroupListing]:
        wanted = None if states is None else _items(states, "states", str)
        return await self._call(lambda deadline: self._operations.list_consumer_groups(wanted, deadline), timeout)

    async def describe_consumer_groups(self, group_ids: Iterable[str], timeout: float | None = None,
                                       ) -> dict[str, ConsumerGroupDescription | KafkaException]:
        groups = _items(group_ids, "group_ids", str)
        return await self._call(lambda deadline: self._operations.describe_consumer_groups(groups, deadline),
                                timeout)

    async def list_transactions(self, states: Iterable[str] = (), producer_ids: Iterable[int] = (),
                                duration_ms: int = -1, timeout: float | None = None) -> list[TransactionListing]:
        """The transactions every broker coordinates (see `gregor.client.AdminClient.list_transactions`)."""
        wanted, pids = _items(states, "states", str), _items(producer_ids, "producer_ids", int)
        return await self._call(
            lambda deadline: self._operations.list_transactions(wanted, pids, duration_ms, deadline), timeout)

    async def describe_transactions(self, transactional_ids: Iterable[str], timeout: float | None = None,
                                    ) -> dict[str, TransactionDescription | KafkaException]:
        ids = _items(transactional_ids, "transactional_ids", str)
        return await self._call(lambda deadline: self._operations.describe_transactions(ids, deadline), timeout)

    async def delete_consumer_groups(self, group_ids: Iterable[str], timeout: float | None = None,
                                     ) -> dict[str, KafkaException | None]:
        groups = _items(group_ids, "group_ids", str)
        return await self._call(lambda deadline: self._operations.delete_consumer_groups(groups, deadline), timeout)

    async def list_consumer_group_offsets(self, group_id: str, partitions: Iterable[tuple[str, int]] | None = None,
                                          require_stable: bool = False, timeout: float | None = None,
                                          ) -> dict[TopicPartition, OffsetAndMetadata | KafkaException]:
        """Committed offsets of a group, for `partitions` or (None) every partition it committed."""
        _check_str(group_id, "group_id")
        wanted = None if partitions is None else partitions_arg(partitions)
        return await self._call(
            lambda deadline: self._operations.list_group_offsets(group_id, wanted, require_stable, deadline), timeout)

    async def alter_consumer_group_offsets(self, group_id: str,
                                           offsets: ByPartition[int | OffsetAndMetadata],
                                           timeout: float | None = None,
                                           ) -> dict[TopicPartition, KafkaException | None]:
        """Commit offsets for a group that has no active members (OffsetCommit, generation -1)."""
        _check_str(group_id, "group_id")
        commits = {TopicPartition(*tp): value if isinstance(value, OffsetAndMetadata) else OffsetAndMetadata(value)
                   for tp, value in _mapping(offsets, "offsets").items()}
        return await self._call(lambda deadline: self._operations.alter_group_offsets(group_id, commits, deadline),
                                timeout)

    async def delete_consumer_group_offsets(self, group_id: str, partitions: Iterable[tuple[str, int]],
                                            timeout: float | None = None,
                                            ) -> dict[TopicPartition, KafkaException | None]:
        _check_str(group_id, "group_id")
        wanted = partitions_arg(partitions)
        return await self._call(lambda deadline: self._operations.delete_group_offsets(group_id, wanted, deadline),
                                timeout)

    # records and offsets of partitions

    async def delete_records(self, before_offsets: ByPartition[int], timeout: float | None = None,
                             ) -> dict[TopicPartition, DeletedRecords | KafkaException]:
        """Delete the records before each offset (-1: up to the high watermark)."""
        wanted = {TopicPartition(*tp): offset for tp, offset in _mapping(before_offsets, "before_offsets").items()}
        return await self._call(lambda deadline: self._operations.delete_records(wanted, deadline), timeout)

    async def list_offsets(self, specs: ByPartition[OffsetSpec],
                           isolation_level: IsolationLevel = IsolationLevel.READ_UNCOMMITTED,
                           timeout: float | None = None) -> dict[TopicPartition, ListedOffset | KafkaException]:
        wanted = {TopicPartition(*tp): spec for tp, spec in _mapping(specs, "specs").items()}
        return await self._call(
            lambda deadline: self._operations.list_offsets(wanted, isolation_level, deadline), timeout)

    # replicas: leaders, reassignments, log dirs

    async def elect_leaders(self, election_type: ElectionType, partitions: Iterable[tuple[str, int]] | None = None,
                            timeout: float | None = None) -> dict[TopicPartition, KafkaException | None]:
        """Elect the preferred (or, UNCLEAN, any live) replica leader of each partition."""
        wanted = None if partitions is None else list(dict.fromkeys(partitions_arg(partitions)))
        kind = ElectionType(election_type)
        return await self._call(lambda deadline: self._operations.elect_leaders(kind, wanted, deadline), timeout)

    async def alter_partition_reassignments(self, reassignments: ByPartition[Sequence[int] | None],
                                            timeout: float | None = None,
                                            ) -> dict[TopicPartition, KafkaException | None]:
        """Move each partition to the given replicas (None cancels its running reassignment)."""
        targets = {TopicPartition(*tp): None if replicas is None else list(replicas)
                   for tp, replicas in _mapping(reassignments, "reassignments").items()}
        return await self._call(lambda deadline: self._operations.alter_reassignments(targets, deadline), timeout)

    async def list_partition_reassignments(self, partitions: Iterable[tuple[str, int]] | None = None,
                                           timeout: float | None = None,
                                           ) -> dict[TopicPartition, PartitionReassignment]:
        wanted = None if partitions is None else partitions_arg(partitions)
        return await self._call(lambda deadline: self._operations.list_reassignments(wanted, deadline), timeout)

    async def describe_log_dirs(self, brokers: Iterable[int] | None = None, timeout: float | None = None,
                                ) -> dict[int, dict[str, LogDirDescription] | KafkaException]:
        """Each broker's log dirs (of `brokers`, or every broker) with the replicas they hold."""
        wanted = None if brokers is None else list(dict.fromkeys(_items(brokers, "brokers", int)))
        return await self._call(lambda deadline: self._operations.describe_log_dirs(wanted, deadline), timeout)


def _check_str(value: object, name: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be str, not {type(value).__name__}")


def _items(values: object, name: str, kind: type[T]) -> list[T]:
    """`values` as a list of `kind`; a bare string or a wrong element type is a TypeError naming `name`."""
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be an iterable of {kind.__name__}, not {type(values).__name__}")
    items = list(values)
    for item in items:
        if not isinstance(item, kind) or (kind is int and isinstance(item, bool)):
            raise TypeError(f"{name} must hold {kind.__name__} values, not {type(item).__name__}")
    return items


def _mapping(values: object, name: str) -> Mapping[Any, Any]:
    if not isinstance(values, Mapping):
        raise TypeError(f"{name} must be a mapping, not {type(values).__name__}")
    return values
