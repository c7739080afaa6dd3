"""A share consumer's fetches and acknowledgements, on the network loop.

One ShareFetch in flight per partition leader, in the member's share session with that broker
(`session.ShareSession`), for the assigned partitions it leads. Acknowledgements the application
made since (`acknowledge`) ride on the next ShareFetch to the partition's leader, as Java's
consumer piggy-backs them; `commit` sends them at once with ShareAcknowledge, and `close` sends
the last ones with epoch -1, closing each session so the broker releases what was acquired and
not delivered. Requests of one session are serialised (a lock per broker), since each moves its
epoch on. Acquired records wait in a buffer until a poll takes them; no new fetch goes out while
records are buffered, so the member holds no more acquisition locks than one fetch's worth.

State shared with the application thread (the buffer, the acknowledgements to send, their
results) is guarded by `lock`.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from gregor.client.errors import ClientErrorCode, KafkaException, error_for
from gregor.client.network import STALE_METADATA_ERRORS, NetworkClient, TopicPartition
from gregor.client.serialization import Deserializer
from gregor.client.share.acknowledgements import GAP, AcknowledgeType, acknowledgement_batches
from gregor.client.share.membership import ShareMembership
from gregor.client.share.records import ShareConsumerRecord, acquired_records
from gregor.client.share.session import CLOSE_EPOCH, SESSION_ERRORS, ShareSession
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ShareAcknowledgeRequest, ShareFetchRequest

log = logging.getLogger(__name__)

SHARE_FETCH_VERSIONS = (1, 1)
SHARE_ACKNOWLEDGE_VERSIONS = (1, 1)


@dataclass(frozen=True)
class ShareFetchSettings:
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    partition_max_bytes: int
    max_records: int
    check_crcs: bool
    request_timeout_ms: int


@dataclass(frozen=True)
class AcknowledgementResult:
    """What became of the acknowledgements of one partition: `error` None when they were applied."""

    partition: TopicPartition
    offsets: frozenset[int]
    error: KafkaException | None


class ShareFetcher:
    def __init__(self, network: NetworkClient, membership: ShareMembership, settings: ShareFetchSettings,
                 key_deserializer: Deserializer, value_deserializer: Deserializer) -> None:
        self.network = network
        self.membership = membership
        self.settings = settings
        self.key_deserializer = key_deserializer
        self.value_deserializer = value_deserializer
        self.lock = threading.Lock()
        self.buffer: collections.deque[ShareConsumerRecord] = collections.deque()
        self.pending: dict[TopicPartition, dict[int, int]] = {}
        self.results: list[AcknowledgementResult] = []
        self.errors: list[KafkaException] = []
        """Records that could not be handed over (undecodable, corrupt), for the next poll to raise."""
        self.on_data: Callable[[], None] | None = None
        self.sessions: dict[int, ShareSession] = {}
        self._session_locks: dict[int, asyncio.Lock] = {}
        self._fetching: set[int] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        self._wakeup: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closing = False

    # -- the application's side (any thread) --

    def acknowledge(self, acknowledgements: Iterable[tuple[TopicPartition, int, int]]) -> None:
        """Queue (partition, offset, type) acknowledgements for the next request to their leaders."""
        with self.lock:
            for partition, offset, kind in acknowledgements:
                self.pending.setdefault(partition, {})[offset] = kind

    def take(self, max_records: int) -> list[ShareConsumerRecord]:
        with self.lock:
            count = min(max_records, len(self.buffer))
            return [self.buffer.popleft() for _ in range(count)]

    def take_error(self) -> KafkaException | None:
        with self.lock:
            return self.errors.pop(0) if self.errors else None

    def take_results(self) -> list[AcknowledgementResult]:
        with self.lock:
            results, self.results = self.results, []
        return results

    def has_data(self) -> bool:
        return bool(self.buffer)

    def wakeup(self) -> None:
        """On the network loop: look again at what to fetch."""
        if self._wakeup is not None:
            self._wakeup.set()

    def wakeup_threadsafe(self) -> None:
        """`wakeup` from any thread."""
        loop = self._loop
        if loop is None:
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self.wakeup()
        else:
            loop.call_soon_threadsafe(self.wakeup)

    # -- the fetch loop --

    def assigned(self) -> frozenset[TopicPartition]:
        names = {metadata.topic_id: name for name, metadata in self.network.cluster.topics.items()
                 if metadata.topic_id is not None}
        partitions, unnamed = self.membership.assignment(names)
        if unnamed:
            self.network.request_metadata_update()
        return partitions

    async def run(self) -> None:
        self._wakeup = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        while not self._closing:
            self._wakeup.clear()
            retry = False
            if not self.buffer and self.membership.member_epoch > 0:
                assigned = self.assigned()
                with self.lock:
                    to_acknowledge = [p for p, acks in self.pending.items() if acks]
                by_leader, missing = self.network.cluster.group_by_leader(sorted(assigned | set(to_acknowledge)))
                if missing:
                    self.network.request_metadata_update()
                    retry = True
                for node, partitions in by_leader.items():
                    self._start_fetch(node, frozenset(p for p in partitions if p in assigned))
                for node, session in list(self.sessions.items()):
                    if node not in by_leader and session.partitions:
                        self._start_fetch(node, frozenset())  # forget what this broker no longer leads for us
            try:
                async with asyncio.timeout(self.network.settings.retry_backoff_ms / 1000 if retry else None):
                    await self._wakeup.wait()
            except TimeoutError:
                pass

    def _start_fetch(self, node: int, wanted: frozenset[TopicPartition]) -> None:
        if node in self._fetching:
            return
        self._fetching.add(node)
        task = asyncio.get_running_loop().create_task(self._fetch(node, wanted), name=f"share-fetch-{node}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _session(self, node: int) -> tuple[ShareSession, asyncio.Lock]:
        if node not in self.sessions:
            self.sessions[node] = ShareSession()
            self._session_locks[node] = asyncio.Lock()
        return self.sessions[node], self._session_locks[node]

    def _take_pending(self, node: int) -> dict[TopicPartition, dict[int, int]]:
        with self.lock:
            by_leader, _ = self.network.cluster.group_by_leader(list(self.pending))
            mine = {partition: self.pending.pop(partition) for partition in by_leader.get(node, ())}
        return {partition: acks for partition, acks in mine.items() if acks}

    async def _fetch(self, node: int, wanted: frozenset[TopicPartition]) -> None:
        try:
            session, lock = self._session(node)
            async with lock:
                if self._closing:
                    return
                await self._fetch_in_session(node, session, wanted)
        except Exception:
            log.exception("share fetch from node %d failed", node)
            await asyncio.sleep(self.network.settings.retry_backoff_ms / 1000)
        finally:
            self._fetching.discard(node)
            self.wakeup()

    async def _fetch_in_session(self, node: int, session: ShareSession, wanted: frozenset[TopicPartition]) -> None:
        acks = self._take_pending(node)
        if acks and not session.open:
            self._fail(acks, KafkaException(ErrorCode.SHARE_SESSION_NOT_FOUND, "the share session these "
                                            "records were acquired in is gone; the broker released them"))
            acks = {}
        named, forgotten = session.plan(wanted)
        ids = self._topic_ids()
        if not wanted and not forgotten and not acks:
            return
        settings = self.settings
        by_topic: dict[str, list[ShareFetchRequest.FetchPartition]] = {}
        for partition in sorted(named | set(acks)):
            if partition.topic not in ids:
                continue
            by_topic.setdefault(partition.topic, []).append(ShareFetchRequest.FetchPartition(
                partition_index=partition.partition, partition_max_bytes=settings.partition_max_bytes,
                acknowledgement_batches=_batches(ShareFetchRequest.AcknowledgementBatch, acks.get(partition, {}))))
        forgotten_by_topic: dict[str, list[int]] = {}
        for partition in forgotten:
            forgotten_by_topic.setdefault(partition.topic, []).append(partition.partition)
        request = ShareFetchRequest(
            group_id=self.membership.group_id, member_id=self.membership.member_id,
            share_session_epoch=session.epoch, max_wait_ms=settings.max_wait_ms, min_bytes=settings.min_bytes,
            max_bytes=settings.max_bytes, max_records=settings.max_records, batch_size=settings.max_records,
            topics=[ShareFetchRequest.FetchTopic(topic_id=ids[topic], partitions=partitions)
                    for topic, partitions in by_topic.items()],
            forgotten_topics_data=[ShareFetchRequest.ForgottenTopic(topic_id=ids[topic], partitions=sorted(indexes))
                                   for topic, indexes in forgotten_by_topic.items() if topic in ids])
        try:
            response = await self.network.send(request, node, versions=SHARE_FETCH_VERSIONS,
                                               timeout_ms=settings.max_wait_ms + settings.request_timeout_ms)
        except KafkaException as error:
            if error.code == ClientErrorCode._DESTROY:
                raise
            log.debug("ShareFetch to node %d failed: %s", node, error)
            self.network.request_metadata_update()  # the broker may be gone and its partitions led elsewhere
            session.reset()
            self._fail(acks, error)
            await asyncio.sleep(self.network.settings.retry_backoff_ms / 1000)
            return
        if response.error_code != ErrorCode.NONE:
            failure = error_for(response.error_code, f"ShareFetch: {response.error_message or ''}".rstrip(": "))
            log.debug("ShareFetch to node %d answered %s", node, failure)
            if response.error_code in SESSION_ERRORS:
                session.reset()
            self._fail(acks, failure)
            await asyncio.sleep(self.network.settings.retry_backoff_ms / 1000)
            return
        session.answered(wanted)
        if self._take_response(response, acks):
            await asyncio.sleep(self.network.settings.retry_backoff_ms / 1000)  # until metadata moves on

    def _take_response(self, response: Any, acks: dict[TopicPartition, dict[int, int]]) -> bool:
        """Buffer the records and queue the results; True when a partition answered with an error."""
        names = {metadata.topic_id: name for name, metadata in self.network.cluster.topics.items()
                 if metadata.topic_id is not None}
        records: list[ShareConsumerRecord] = []
        follow_up: list[tuple[TopicPartition, int, int]] = []
        results: list[AcknowledgementResult] = []
        errors: list[KafkaException] = []
        failed = False
        for topic in response.responses:
            name = names.get(topic.topic_id)
            if name is None:
                continue
            for data in topic.partitions:
                partition = TopicPartition(name, data.partition_index)
                if partition in acks:
                    results.append(_result(partition, acks.pop(partition), data.acknowledge_error_code,
                                           data.acknowledge_error_message))
                if data.error_code != ErrorCode.NONE:
                    failed = True
                    if data.error_code in STALE_METADATA_ERRORS:
                        self.network.request_metadata_update()
                    log.debug("ShareFetch of %s-%d: %s", name, data.partition_index, error_for(data.error_code).name)
                    continue
                found = acquired_records(
                    partition, data.records, data.acquired_records, key_deserializer=self.key_deserializer,
                    value_deserializer=self.value_deserializer, check_crcs=self.settings.check_crcs)
                records.extend(found.records)
                errors.extend(found.errors)
                follow_up.extend((partition, offset, GAP) for offset in found.gaps)
                follow_up.extend((partition, offset, AcknowledgeType.RELEASE) for offset in found.unseen)
                follow_up.extend((partition, offset, AcknowledgeType.REJECT) for offset in found.undecodable)
        for partition, left in acks.items():  # not answered for: the broker did not apply them
            results.append(AcknowledgementResult(partition, frozenset(left), KafkaException(
                ErrorCode.UNKNOWN_SERVER_ERROR, f"ShareFetch did not answer for {partition.topic}-"
                                                f"{partition.partition}'s acknowledgements")))
        with self.lock:
            self.buffer.extend(records)
            self.results.extend(results)
            self.errors.extend(errors)
        if follow_up:
            self.acknowledge(follow_up)
        if (records or results or errors) and self.on_data is not None:
            self.on_data()
        return failed

    def _fail(self, acks: dict[TopicPartition, dict[int, int]], error: KafkaException) -> None:
        if acks:
            with self.lock:
                self.results.extend(AcknowledgementResult(partition, frozenset(offsets), error)
                                    for partition, offsets in acks.items())
            if self.on_data is not None:
                self.on_data()

    def _topic_ids(self) -> dict[str, Any]:
        return {name: metadata.topic_id for name, metadata in self.network.cluster.topics.items()
                if metadata.topic_id is not None}

    # -- ShareAcknowledge --

    async def commit(self, acknowledgements: Iterable[tuple[TopicPartition, int, int]], deadline: float, *,
                     closing: bool = False) -> list[AcknowledgementResult]:
        """Send `acknowledgements` and those queued and not sent yet, now (ShareAcknowledge to
        each leader), and return what became of them; `closing` also closes every open session
        (epoch -1)."""
        with self.lock:
            pending, self.pending = {p: acks for p, acks in self.pending.items() if acks}, {}
            for partition, offset, kind in acknowledgements:
                pending.setdefault(partition, {})[offset] = kind
        by_leader, missing = self.network.cluster.group_by_leader(list(pending))
        results = [AcknowledgementResult(partition, frozenset(pending[partition]), error_for(
            code, f"no leader known for {partition.topic}-{partition.partition}")) for partition, code in missing.items()]
        nodes = set(by_leader) | ({node for node, session in self.sessions.items() if session.open} if closing else set())
        answers = await asyncio.gather(*(
            self._acknowledge(node, {p: pending[p] for p in by_leader.get(node, ())}, deadline, closing)
            for node in sorted(nodes)))
        for answer in answers:
            results.extend(answer)
        return results

    async def _acknowledge(self, node: int, acks: dict[TopicPartition, dict[int, int]], deadline: float,
                           closing: bool) -> list[AcknowledgementResult]:
        session, lock = self._session(node)
        async with lock:
            if not session.open:
                error = KafkaException(ErrorCode.SHARE_SESSION_NOT_FOUND, "the share session these records were "
                                       "acquired in is gone; the broker released them")
                return [AcknowledgementResult(p, frozenset(offsets), error) for p, offsets in acks.items()]
            ids = self._topic_ids()
            by_topic: dict[str, list[ShareAcknowledgeRequest.AcknowledgePartition]] = {}
            for partition, offsets in sorted(acks.items()):
                by_topic.setdefault(partition.topic, []).append(ShareAcknowledgeRequest.AcknowledgePartition(
                    partition_index=partition.partition,
                    acknowledgement_batches=_batches(ShareAcknowledgeRequest.AcknowledgementBatch, offsets)))
            request = ShareAcknowledgeRequest(
                group_id=self.membership.group_id, member_id=self.membership.member_id,
                share_session_epoch=CLOSE_EPOCH if closing else session.epoch,
                topics=[ShareAcknowledgeRequest.AcknowledgeTopic(topic_id=ids[topic], partitions=partitions)
                        for topic, partitions in by_topic.items() if topic in ids])
            try:
                response = await self.network.send(request, node, versions=SHARE_ACKNOWLEDGE_VERSIONS,
                                                   timeout_ms=max((deadline - time.monotonic()) * 1000, 1.0))
            except KafkaException as error:
                session.reset()
                return [AcknowledgementResult(p, frozenset(offsets), error) for p, offsets in acks.items()]
            if closing:
                session.reset()
            if response.error_code != ErrorCode.NONE:
                if response.error_code in SESSION_ERRORS:
                    session.reset()
                failure = error_for(response.error_code, response.error_message)
                return [AcknowledgementResult(p, frozenset(offsets), failure) for p, offsets in acks.items()]
            if not closing:
                session.answered()
            names = {metadata.topic_id: name for name, metadata in self.network.cluster.topics.items()
                     if metadata.topic_id is not None}
            results = []
            for topic in response.responses:
                for data in topic.partitions:
                    partition = TopicPartition(names.get(topic.topic_id, ""), data.partition_index)
                    if partition in acks:
                        results.append(_result(partition, acks.pop(partition), data.error_code, data.error_message))
            results.extend(AcknowledgementResult(p, frozenset(offsets), KafkaException(
                ErrorCode.UNKNOWN_SERVER_ERROR, "ShareAcknowledge did not answer for this partition"))
                for p, offsets in acks.items())
            return results

    def stop_threadsafe(self) -> None:
        """No fetch goes out after this (close sends the last acknowledgements itself); any thread."""
        self._closing = True
        self.wakeup_threadsafe()


def _batches(kind: Any, acks: dict[int, int]) -> list[Any]:
    return [kind(first_offset=first, last_offset=last, acknowledge_types=types)
            for first, last, types in acknowledgement_batches(acks)]


def _result(partition: TopicPartition, acks: dict[int, int], code: int, message: str | None) -> AcknowledgementResult:
    error = None if code == ErrorCode.NONE else error_for(code, message)
    return AcknowledgementResult(partition, frozenset(acks), error)
