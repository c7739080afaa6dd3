"""The follower side of replication between brokers, sans-IO: one link per leader broker (Kafka's
ReplicaFetcherThread, without the thread).

Each followed partition asks, through its effects, for a Fetch or an OffsetsForLeaderEpoch to its
leader. A link carries every partition that follows the same leader in one request (replica id =
this broker, topics by id from Fetch v13 and by name before, so the request suits whichever
version carries it), one request in flight at a time:
OffsetsForLeaderEpoch questions first, since a truncating partition must not fetch, then the
fetches. The host sends what `ready()` returns and reports each answer (or the failure to get
one) with `on_response` / `on_failure`; the partitions' reactions come back as effects, among
them their next requests, which the host adds again. The host should add every effect of a step
before it asks `ready()`: a request sent for the first partition that asks again would leave the
others waiting behind it, which a leader may hold for its max wait. A partition no longer hosted (deleted,
reassigned) is skipped when its answer comes.

A link fetches in an incremental fetch session with its leader (KIP-227, `fetch_sessions`): the
first fetch asks for one, and the next ones name only the partitions whose fetch position
changed and those no longer fetched. A partition the answer leaves out has nothing new: its fetch
stays in flight (`Partition.still_fetching`) and rides with the link, in every request of the
session, until an answer names it: an answer costs the partitions it names, not those riding,
so a follower of many idle partitions pays for the few that move. A link with partitions riding
always has a request out (the session's long poll). The session's errors and a lost request make
every partition the link fetches ask again, in a new session. The host passes every event on a
partition to `check_following`, since a fetch riding is otherwise not looked at: one that
stops following (it leads now, or is gone) stops riding there.
"""

from __future__ import annotations

import itertools
import uuid
from dataclasses import dataclass, field
from typing import Callable, Iterator, Union

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FetchRequest, FetchResponse, OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse
from gregor.protocol.primitives import ZERO_UUID
from gregor.replication.effects import Effect, SendFetch, SendOffsetsForLeaderEpoch
from gregor.replication.fetch_sessions import INITIAL_EPOCH, INVALID_SESSION_ID, next_epoch
from gregor.replication.partition import Partition

REPLICA_FETCH_RESPONSE_MAX_BYTES = 10 * 1024 * 1024
_SESSION_ERRORS = (ErrorCode.FETCH_SESSION_ID_NOT_FOUND, ErrorCode.INVALID_FETCH_SESSION_EPOCH,
                   ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
Key = tuple[str, int]
LinkRequest = Union[FetchRequest, OffsetForLeaderEpochRequest]


@dataclass(frozen=True)
class Outgoing:
    """A request for the host to send to broker `leader_id`, answered with `request_id`."""

    leader_id: int
    request_id: int
    request: LinkRequest


_Carried = dict[Key, tuple[Partition, Union[SendFetch, SendOffsetsForLeaderEpoch]]]


@dataclass
class _Session:
    """The follower's side of an incremental fetch session with one leader (KIP-227): the fetch
    positions the leader holds for it, and the epoch of the next request."""

    session_id: int = INVALID_SESSION_ID
    next_epoch: int = INITIAL_EPOCH
    positions: dict[Key, FetchRequest.FetchPartition] = field(default_factory=dict)
    sent: dict[Key, FetchRequest.FetchPartition] = field(default_factory=dict)  # named by the request in flight
    forgotten: list[Key] = field(default_factory=list)  # forgotten by the request in flight
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)  # of the topics named, for forgetting them
    names: dict[int, str] = field(default_factory=dict)  # the topics named, by id (as an int)
    strays: list[tuple[Union[uuid.UUID, str], int]] = field(default_factory=list)
    """Partitions the leader's session answered that this follower does not fetch (a topic deleted
    and created again under its name between two fetches leaves the old id there): the next
    request forgets them, or the leader would answer their error at once on every fetch."""

    def reset(self) -> None:
        self.session_id, self.next_epoch = INVALID_SESSION_ID, INITIAL_EPOCH
        self.positions, self.sent, self.forgotten, self.strays = {}, {}, [], []
        self.topic_ids, self.names = {}, {}


@dataclass
class _Link:
    fetches: _Carried = field(default_factory=dict)  # to name in the next fetch (asked again)
    asks: _Carried = field(default_factory=dict)
    in_flight: int | None = None  # request id
    carried: _Carried = field(default_factory=dict)  # what the request in flight names
    riding: _Carried = field(default_factory=dict)  # fetches in flight in the session, named by no request
    released: set[Key] = field(default_factory=set)  # left the fetches since the last request: maybe to forget
    session: _Session = field(default_factory=_Session)


class FetcherLinks:
    def __init__(self, broker_id: int, max_wait_ms: int, is_current: Callable[[Partition], bool],
                 response_max_bytes: int = REPLICA_FETCH_RESPONSE_MAX_BYTES) -> None:
        """`is_current(partition)`: whether the partition is still the one hosted (answers for a
        deleted or re-created one are dropped)."""
        self.broker_id = broker_id
        self.max_wait_ms = max_wait_ms
        self.response_max_bytes = response_max_bytes
        self._is_current = is_current
        self._links: dict[int, _Link] = {}
        self._riding_with: dict[Key, int] = {}  # the leader whose link a partition rides with
        self._request_ids: Iterator[int] = itertools.count(1)

    def add(self, partition: Partition, effect: SendFetch | SendOffsetsForLeaderEpoch) -> None:
        key = partition.key
        self._stop_riding(key)
        link = self._links.get(effect.leader_id)
        if link is None:  # not setdefault: a link and its session are made once, not on every fetch
            link = self._links[effect.leader_id] = _Link()
        if isinstance(effect, SendFetch):
            link.fetches[key] = (partition, effect)
        else:
            link.asks[key] = (partition, effect)

    def check_following(self, partition: Partition) -> None:
        """After an event on `partition`: if a fetch of it rides and it no longer follows (it leads
        now, or is no longer hosted), the fetch stops riding and the next request forgets it."""
        leader_id = self._riding_with.get(partition.key)
        if leader_id is None or self._links[leader_id].riding[partition.key][0] is not partition:
            return
        if partition.fetcher is None or not self._is_current(partition):
            self._stop_riding(partition.key)

    def _stop_riding(self, key: Key) -> None:
        leader_id = self._riding_with.pop(key, None)
        if leader_id is not None:
            link = self._links[leader_id]
            del link.riding[key]
            link.released.add(key)

    def _ride(self, leader_id: int, link: _Link, key: Key,
              carried: tuple[Partition, Union[SendFetch, SendOffsetsForLeaderEpoch]]) -> None:
        link.riding[key] = carried
        self._riding_with[key] = leader_id

    def has_ready(self) -> bool:
        """Whether `ready()` has a request to give."""
        return any(link.in_flight is None and (link.asks or link.fetches or link.riding)
                   for link in self._links.values())

    def ready(self) -> list[Outgoing]:
        """The requests to send now: one per leader with questions waiting, or fetches riding,
        and none in flight."""
        outgoing = []
        for leader_id, link in self._links.items():
            if link.in_flight is not None or not (link.asks or link.fetches or link.riding):
                continue
            request_id = next(self._request_ids)
            link.in_flight = request_id
            if link.asks:
                link.carried, link.asks = link.asks, {}
                outgoing.append(Outgoing(leader_id, request_id, self._epoch_request(link.carried)))
            else:
                outgoing.append(Outgoing(leader_id, request_id, self._fetch_request(link)))
        return outgoing

    def _fetch_request(self, link: _Link) -> FetchRequest:
        """A full fetch that asks for a new session, or an incremental one in the session: only
        the partitions whose fetch position changed, and those no longer fetched to forget."""
        session = link.session
        by_topic: dict[tuple[uuid.UUID, str], list[FetchRequest.FetchPartition]] = {}
        incremental = session.session_id != INVALID_SESSION_ID
        if not incremental and link.riding:  # a new session names every partition (riding ones were reset)
            for key in list(link.riding):
                link.fetches[key] = link.riding[key]
                self._stop_riding(key)
        fetches, link.carried, link.fetches = link.fetches, link.fetches, {}
        session.sent = {}
        for key, (partition, effect) in fetches.items():
            assert isinstance(effect, SendFetch)
            if incremental:
                known = session.positions.get(key)
                if known is effect.partition:  # the same fetch rides again
                    continue
                if _same_position(known, effect.partition):
                    session.positions[key] = effect.partition  # an equal position: the next check is by identity
                    continue
            session.sent[key] = effect.partition
            if session.topic_ids.get(partition.topic) != partition.topic_id:
                session.topic_ids[partition.topic] = partition.topic_id
                session.names[partition.topic_id.int] = partition.topic
            by_topic.setdefault((partition.topic_id, partition.topic), []).append(effect.partition)
        session.forgotten = [key for key in link.released if key in session.positions and key not in fetches
                             and key not in link.riding] if incremental else []
        link.released = set()
        forgotten: dict[tuple[str, uuid.UUID], list[int]] = {}
        for topic, index in session.forgotten:
            forgotten.setdefault((topic, session.topic_ids.get(topic, ZERO_UUID)), []).append(index)
        for topic_key, index in session.strays if incremental else ():
            named = ("", topic_key) if isinstance(topic_key, uuid.UUID) else (topic_key, ZERO_UUID)
            forgotten.setdefault(named, []).append(index)
        session.strays = []
        return FetchRequest(replica_id=self.broker_id, replica_state=FetchRequest.ReplicaState(replica_id=self.broker_id),
                            max_wait_ms=self.max_wait_ms, min_bytes=1, max_bytes=self.response_max_bytes,
                            isolation_level=0, session_id=session.session_id, session_epoch=session.next_epoch,
                            topics=[FetchRequest.FetchTopic(topic_id=topic_id, topic=name, partitions=partitions)
                                    for (topic_id, name), partitions in by_topic.items()],
                            forgotten_topics_data=[
                                FetchRequest.ForgottenTopic(topic=topic, topic_id=topic_id, partitions=indexes)
                                for (topic, topic_id), indexes in forgotten.items()])

    @staticmethod
    def _epoch_request(asks: _Carried) -> OffsetForLeaderEpochRequest:
        by_topic: dict[str, list[OffsetForLeaderEpochRequest.OffsetForLeaderPartition]] = {}
        for partition, effect in asks.values():
            assert isinstance(effect, SendOffsetsForLeaderEpoch)
            by_topic.setdefault(partition.topic, []).append(effect.partition)
        return OffsetForLeaderEpochRequest(topics=[
            OffsetForLeaderEpochRequest.OffsetForLeaderTopic(topic=topic, partitions=partitions)
            for topic, partitions in by_topic.items()])

    def _take(self, leader_id: int, request_id: int) -> _Carried | None:
        link = self._links.get(leader_id)
        if link is None or link.in_flight != request_id:
            return None
        carried, link.carried, link.in_flight = link.carried, {}, None
        return carried

    def on_response(self, leader_id: int, request_id: int, response: FetchResponse | OffsetForLeaderEpochResponse,
                    now_ms: int) -> list[tuple[Partition, list[Effect]]]:
        """Hand each partition its answer; their effects, to carry out (new requests among them)."""
        carried = self._take(leader_id, request_id)
        if carried is None:
            return []
        if isinstance(response, FetchResponse):
            link = self._links[leader_id]
            incremental = link.session.session_id != INVALID_SESSION_ID
            answers, strays = _answers(response, carried, link)  # by the session the request was sent in
            unchanged = self._session_answered(link.session, response)
            rides = incremental and unchanged and response.error_code == ErrorCode.NONE
            if rides:
                link.session.strays = strays
                for key in answers:  # a partition riding that the answer names leaves the ride
                    if key in link.riding:
                        carried[key] = link.riding[key]
                        self._stop_riding(key)
            else:  # no session goes on: every partition riding is answered too
                for key in list(link.riding):
                    carried[key] = link.riding[key]
                    self._stop_riding(key)
            results = []
            for key, (partition, effect) in carried.items():
                data = answers.get(key)
                if data is None and rides and self._is_current(partition) \
                        and partition.still_fetching(effect.request_id):
                    self._ride(leader_id, link, key, (partition, effect))  # nothing new: its fetch rides on
                    continue
                link.released.add(key)
                if data is None:
                    data = _unchanged(partition) if unchanged else FetchResponse.PartitionData(
                        partition_index=partition.index, error_code=response.error_code or ErrorCode.UNKNOWN_SERVER_ERROR)
                if self._is_current(partition):
                    results.append((partition, partition.on_fetch_response(effect.request_id, data, now_ms)))
            return results
        epochs = {(topic.topic, data.partition): data for topic in response.topics for data in topic.partitions}
        results = []
        for key, (partition, effect) in carried.items():
            answer = epochs.get(key) or OffsetForLeaderEpochResponse.EpochEndOffset(
                partition=partition.index, error_code=ErrorCode.UNKNOWN_SERVER_ERROR)
            if self._is_current(partition):
                results.append((partition, partition.on_offsets_for_leader_epoch_response(effect.request_id, answer,
                                                                                          now_ms)))
        return results

    @staticmethod
    def _session_answered(session: _Session, response: FetchResponse) -> bool:
        """Bring the session up to date with the answer to a fetch; whether a partition the fetch
        carried and the answer leaves out is unchanged (an incremental answer, or the session's
        error: the partitions ask again at once, in a full fetch), rather than failed."""
        code = response.error_code
        if code != ErrorCode.NONE:
            session.reset()
            return code in _SESSION_ERRORS
        if session.session_id == INVALID_SESSION_ID:
            if response.session_id != INVALID_SESSION_ID:  # the leader created the session the fetch asked for
                session.session_id, session.next_epoch = response.session_id, next_epoch(INITIAL_EPOCH)
                session.positions = session.sent
            return False
        if response.session_id != session.session_id:  # the leader answered without the session
            session.reset()
            return True
        session.next_epoch = next_epoch(session.next_epoch)
        session.positions.update(session.sent)
        for key in session.forgotten:
            session.positions.pop(key, None)
        return True

    def on_failure(self, leader_id: int, request_id: int, now_ms: int) -> list[tuple[Partition, list[Effect]]]:
        """The leader could not be asked (unreachable, timed out): each partition retries after its backoff."""
        carried = self._take(leader_id, request_id)
        if carried is None:
            return []
        link = self._links[leader_id]
        link.session.reset()  # the answer may be lost: the next fetch starts a new session
        fetch_lost = not carried or isinstance(next(iter(carried.values()))[1], SendFetch)
        for key in list(link.riding):  # what rode with a lost fetch is lost with it; else it asks anew
            if fetch_lost:
                carried[key] = link.riding[key]
            else:
                link.fetches[key] = link.riding[key]
            self._stop_riding(key)
        link.released.clear()
        results = []
        for partition, effect in carried.values():
            if not self._is_current(partition):
                continue
            if isinstance(effect, SendFetch):
                results.append((partition, partition.on_fetch_response(effect.request_id, FetchResponse.PartitionData(
                    partition_index=partition.index, error_code=ErrorCode.NETWORK_EXCEPTION), now_ms)))
            else:
                results.append((partition, partition.on_offsets_for_leader_epoch_response(
                    effect.request_id, OffsetForLeaderEpochResponse.EpochEndOffset(
                        partition=partition.index, error_code=ErrorCode.NETWORK_EXCEPTION), now_ms)))
        return results


def _answers(response: FetchResponse, carried: _Carried, link: _Link
             ) -> tuple[dict[Key, FetchResponse.PartitionData], list[tuple[Union[uuid.UUID, str], int]]]:
    """The answer's partitions by the key of the fetch they answer (carried by the request, or
    riding), and those it answers that the link does not fetch, to forget (topics come back by id
    from v13, by name before; an id is matched through the ids the session named, compared as
    ints: a UUID hashes in Python; a topic deleted and created again under its name has a new
    one). A partition that asked again meanwhile, or stopped riding, is neither: that answer is
    dropped (its next fetch is answered, or the next request forgets it)."""
    answers: dict[Key, FetchResponse.PartitionData] = {}
    strays: list[tuple[Union[uuid.UUID, str], int]] = []
    names = link.session.names
    for topic in response.responses:
        topic_id = topic.topic_id.int
        name = names.get(topic_id) if topic_id else topic.topic
        for data in topic.partitions:
            if name is not None:
                key = (name, data.partition_index)
                fetched = carried.get(key) or link.riding.get(key)
                if fetched is not None and (not topic_id or fetched[0].topic_id.int == topic_id):
                    answers[key] = data
                    continue
                if fetched is None and (key in link.fetches or key in link.asks or key in link.released):
                    continue
            strays.append((topic.topic_id if topic_id else topic.topic, data.partition_index))
    return answers, strays


def _same_position(known: FetchRequest.FetchPartition | None, asked: FetchRequest.FetchPartition) -> bool:
    """Whether an incremental fetch may leave the partition out: the leader's session holds this position."""
    return known is not None and (
        known.fetch_offset, known.current_leader_epoch, known.last_fetched_epoch, known.log_start_offset,
        known.partition_max_bytes) == (
        asked.fetch_offset, asked.current_leader_epoch, asked.last_fetched_epoch, asked.log_start_offset,
        asked.partition_max_bytes)


def _unchanged(partition: Partition) -> FetchResponse.PartitionData:
    """A partition an incremental answer leaves out: nothing new, which the follower takes as an
    answer with no records and the high watermark and log start it already has, and asks again."""
    return FetchResponse.PartitionData(partition_index=partition.index, error_code=ErrorCode.NONE,
                                       high_watermark=partition.high_watermark, last_stable_offset=-1,
                                       log_start_offset=partition.log_start_offset, records=b"")
