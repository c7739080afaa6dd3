"""What the synchronous and the asyncio ShareConsumer share: configuration, the member, the
fetcher, and the bookkeeping of delivered records and their acknowledgements (Java's
KafkaShareConsumer semantics).

Acknowledgement modes (`share.acknowledgement.mode`):
- implicit (the default): the records a poll returned are accepted by the next poll,
  `commit_sync`/`commit_async` or `close`; `acknowledge` is refused.
- explicit: every record a poll returned must be acknowledged (`acknowledge(record, type)`)
  before the next poll, which otherwise raises, as Java's raises IllegalStateException.

Acknowledgements ride on the next ShareFetch to the partition's leader, or go at once with
ShareAcknowledge on a commit. The acknowledgement commit callback hears what became of them, on
the application's thread, inside poll, commit or close.
"""

from __future__ import annotations

import itertools
import logging
from typing import Any, Callable, Iterable, Mapping

from gregor.client.config import Role, parse_config
from gregor.client.consumer.records import ConsumerRecords
from gregor.client.errors import ClientErrorCode, KafkaException
from gregor.client.network import NetworkClient, NetworkSettings, TopicPartition
from gregor.client.serialization import resolve_deserializer
from gregor.client.share.acknowledgements import AcknowledgeType
from gregor.client.share.fetcher import AcknowledgementResult, ShareFetcher, ShareFetchSettings
from gregor.client.share.member import ShareGroupMember
from gregor.client.share.membership import ShareMembership
from gregor.client.share.records import ShareConsumerRecord

log = logging.getLogger(__name__)

_CLIENT_NUMBERS = itertools.count(1)

AcknowledgementCommitCallback = Callable[[Mapping[TopicPartition, set[int]], "KafkaException | None"], Any]


class ShareConsumerBase:
    def __init__(self, config: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> None:
        parsed = parse_config(Role.SHARE_CONSUMER, config, **kwargs)
        self._group_id: str = parsed["group.id"]
        self.client_id = parsed["client.id"] or f"share-consumer-{self._group_id}-{next(_CLIENT_NUMBERS)}"
        self._explicit = parsed["share.acknowledgement.mode"] == "explicit"
        self._max_poll_records = parsed["max.poll.records"]
        self._default_timeout = parsed["default.api.timeout.ms"] / 1000
        self._network = NetworkClient(NetworkSettings.from_config({**parsed, "client.id": self.client_id}))
        self._membership = ShareMembership(self._group_id, rack_id=parsed["client.rack"] or None,
                                           retry_backoff_ms=parsed["retry.backoff.ms"])
        self._member = ShareGroupMember(self._network, self._membership)
        self._fetcher = ShareFetcher(self._network, self._membership, ShareFetchSettings(
            max_wait_ms=parsed["fetch.max.wait.ms"], min_bytes=parsed["fetch.min.bytes"],
            max_bytes=parsed["fetch.max.bytes"], partition_max_bytes=parsed["max.partition.fetch.bytes"],
            max_records=parsed["max.poll.records"], check_crcs=parsed["check.crcs"],
            request_timeout_ms=parsed["request.timeout.ms"]),
            resolve_deserializer(parsed["key.deserializer"], "key.deserializer"),
            resolve_deserializer(parsed["value.deserializer"], "value.deserializer"))
        self._member.on_answer = self._fetcher.wakeup
        self._topics: tuple[str, ...] = ()
        self._delivered: dict[tuple[TopicPartition, int], int | None] = {}
        self._callback: AcknowledgementCommitCallback | None = None
        self._closed = False

    # -- subscriptions --

    def _subscription_arg(self, topics: Iterable[str] | str) -> tuple[str, ...]:
        if isinstance(topics, str):
            topics = [topics]
        if not isinstance(topics, Iterable):
            raise TypeError(f"topics must be a topic name or an iterable of names, not {type(topics).__name__}")
        names = list(topics)
        if any(not isinstance(name, str) or not name.strip() for name in names):
            raise KafkaException(ClientErrorCode._INVALID_ARG, f"topic names must be non-empty strings: {names!r}")
        return tuple(sorted(set(names)))

    def subscription(self) -> set[str]:
        return set(self._topics)

    def _check_open(self) -> None:
        if self._closed:
            raise KafkaException(ClientErrorCode._STATE, "the share consumer is closed")

    def _check_subscribed(self) -> None:
        if not self._topics:
            raise KafkaException(ClientErrorCode._STATE, "the share consumer is not subscribed to any topics")
        if self._membership.fatal is not None:
            raise self._membership.fatal

    # -- acknowledgements --

    def set_acknowledgement_commit_callback(self, callback: AcknowledgementCommitCallback | None) -> None:
        """`callback(offsets by partition, error or None)` once the broker answered for them (Java's
        AcknowledgementCommitCallback); it runs inside poll, commit or close on this thread."""
        self._callback = callback

    def acknowledge(self, record: ShareConsumerRecord, type: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """Explicit mode: say what became of a record of the last poll (ACCEPT: processed,
        RELEASE: deliver it again, REJECT: never deliver it again). Sent with the next poll or commit."""
        self._check_open()
        if not self._explicit:
            raise KafkaException(ClientErrorCode._STATE, "acknowledge() needs share.acknowledgement.mode=explicit "
                                                         "(implicit mode accepts a poll's records with the next poll)")
        kind = AcknowledgeType(type)
        key = (TopicPartition(record.topic, record.partition), record.offset)
        if key not in self._delivered:
            raise KafkaException(ClientErrorCode._STATE, f"record {record.topic}-{record.partition}@{record.offset} "
                                                         f"was not delivered by the last poll, or is acknowledged "
                                                         f"and committed already")
        self._delivered[key] = kind

    def _before_poll(self) -> None:
        """Implicit mode: accept the last poll's records; explicit mode: refuse to go on while one
        of them is not acknowledged. Then queue the acknowledgements for the leaders."""
        if self._explicit:
            waiting = [key for key, kind in self._delivered.items() if kind is None]
            if waiting:
                partition, offset = waiting[0]
                raise KafkaException(ClientErrorCode._STATE, f"{len(waiting)} record(s) of the last poll are not "
                                     f"acknowledged (the first: {partition.topic}-{partition.partition}@{offset}); "
                                     f"with share.acknowledgement.mode=explicit every record must be acknowledged "
                                     f"before the next poll")
        self._queue_acknowledgements()

    def _queue_acknowledgements(self) -> None:
        """Hand the delivered records' acknowledgements to the fetcher, for the next ShareFetch."""
        ready = self._acknowledged()
        if ready:
            self._fetcher.acknowledge(ready)
            self._fetcher.wakeup_threadsafe()

    def _acknowledged(self) -> list[tuple[TopicPartition, int, int]]:
        """The delivered records' acknowledgements, forgotten here (ACCEPT for every record in
        implicit mode; only those acknowledged in explicit mode)."""
        ready = []
        for (partition, offset), kind in list(self._delivered.items()):
            if kind is None and self._explicit:
                continue
            ready.append((partition, offset, int(kind if kind is not None else AcknowledgeType.ACCEPT)))
            del self._delivered[(partition, offset)]
        return ready

    def _deliver(self, records: list[ShareConsumerRecord]) -> ConsumerRecords:
        by_partition: dict[TopicPartition, list[Any]] = {}
        for record in records:
            partition = TopicPartition(record.topic, record.partition)
            by_partition.setdefault(partition, []).append(record)
            self._delivered[(partition, record.offset)] = None
        return ConsumerRecords(by_partition)

    def _report(self, results: list[AcknowledgementResult]) -> dict[TopicPartition, KafkaException | None]:
        """Call the commit callback for `results` (grouped by outcome) and sum them up by partition."""
        outcome: dict[TopicPartition, KafkaException | None] = {}
        groups: dict[int, tuple[KafkaException | None, dict[TopicPartition, set[int]]]] = {}
        for result in results:
            outcome[result.partition] = outcome.get(result.partition) or result.error
            error, offsets = groups.setdefault(id(result.error) if result.error else 0, (result.error, {}))
            offsets.setdefault(result.partition, set()).update(result.offsets)
        if self._callback is not None:
            for error, offsets in groups.values():
                try:
                    self._callback(offsets, error)
                except Exception:
                    log.exception("acknowledgement commit callback failed")
        elif any(result.error is not None for result in results):
            log.warning("acknowledgements failed: %s", "; ".join(
                f"{r.partition.topic}-{r.partition.partition}: {r.error}" for r in results if r.error is not None))
        return outcome

    def _run_callbacks(self) -> None:
        results = self._fetcher.take_results()
        if results:
            self._report(results)

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.client_id}{' closed' if self._closed else ''}>"


def failed(acknowledgements: Iterable[tuple[TopicPartition, int, int]], error: BaseException
           ) -> list[AcknowledgementResult]:
    """Results saying that `acknowledgements` were not applied, for a commit that failed as a whole
    (a failure that is not a KafkaException, which would be a bug, is reported as _STATE)."""
    by_partition: dict[TopicPartition, set[int]] = {}
    for partition, offset, _ in acknowledgements:
        by_partition.setdefault(partition, set()).add(offset)
    cause = error if isinstance(error, KafkaException) else KafkaException(
        ClientErrorCode._STATE, f"acknowledgement commit failed: {error!r}")
    return [AcknowledgementResult(partition, frozenset(offsets), cause) for partition, offsets in by_partition.items()]
