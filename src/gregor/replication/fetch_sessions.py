"""Incremental fetch sessions for followers (KIP-227), the leader's side, sans-IO.

A follower's fetch names every partition it follows from this leader, and every answer carries
all of them, though nearly all are idle at any moment (the `__consumer_offsets` partitions a
broker follows): decoding, serving and encoding them was most of a replication round's work.
With a session the leader keeps the partitions and their fetch positions; the follower's next
requests name only the partitions whose fetch position changed (and those to forget), and the
answers only the partitions with something to say: records, an error, a diverging epoch, or a
high watermark, last stable offset or log start offset other than last answered. A waiting fetch
is parked under every partition of the session, so that an append to any of them completes it.

Most partitions of a session are idle most of the time (the `__consumer_offsets` partitions a
broker follows), and serving each of them on every fetch was a tenth of a busy leader's time. A
partition a fetch found settled (the follower in sync at the log end, the high watermark there,
nothing waiting, the answer telling nothing new: `Partition.settled_for`) rests: the session's
fetches leave it out, so that a fetch costs the partitions that are not resting, until the
partition changes (`Partition.rest`: any change of what a follower's fetch could be told or could
move). The change tells the session, which serves the partition again from its next fetch and
gives the follower, as the partition knows it, the session's last fetch time: every fetch of the
session was a fetch of the partition at its log end, and the follower's lag is measured from the
last of them once the log end moves. A fetch parked while partitions rest waits under the
session's key (`SessionWakeKey`) besides the keys of the partitions it served, and an append to a
resting partition wakes it through that key (`Partition.take_woken_sessions`). Every partition
is served in full at least every `FULL_SERVE_INTERVAL_MS` besides, which bounds the delay of a
change the partition does not see (a log start moved by retention, which the follower learns from
the next answer).

Request metadata (Kafka's FetchMetadata): session id 0 with epoch 0 creates a session and is a
full fetch, answered in full with the new session's id; session id 0 with epoch -1 is a full
fetch without a session (answered with session id 0, as before sessions); a session id with
epoch -1 closes that session, and the fetch is served without one; a session id with epoch 0
replaces that session by a new one; a session id with its next epoch (1, 2, ...) is an
incremental fetch. An unknown session id (or one of another replica) is answered
FETCH_SESSION_ID_NOT_FOUND, a wrong epoch INVALID_FETCH_SESSION_EPOCH, and a session whose topics
were named by name fetched with topic ids or the other way (a version change between fetches)
FETCH_SESSION_TOPIC_ID_ERROR, with no partitions; the follower then starts a new session.

Sessions are kept per follower: a follower's new session replaces its previous one (it has
one fetcher link per leader), so their number is bounded by the brokers, and a session of a
broker that goes away is dropped with its next one or when the leader restarts. A fetch that
asks for a session when Kafka's default `max.incremental.fetch.session.cache.slots` (1000) are
taken is served without one (any client may fetch as a follower where no authorizer guards it). Only follower
fetches use sessions: consumers' fetches are answered sessionless (`handlers/fetch.py`).
"""

from __future__ import annotations

import functools
import itertools
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Iterator, Union

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FetchRequest, FetchResponse

if TYPE_CHECKING:
    from gregor.replication.partition import Partition
    from gregor.replication.remote_replica import RemoteReplica

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
#: Kafka's default `max.incremental.fetch.session.cache.slots`: past it a new follower is served without a session
MAX_SESSIONS = 1000
#: How often every partition of a session is served in full, resting ones included
FULL_SERVE_INTERVAL_MS = 500
_MAX_EPOCH = 2**31 - 1


def next_epoch(epoch: int) -> int:
    """The epoch after `epoch`: an int32 that wraps to 1 (0 would open a new session), as Kafka's
    FetchMetadata.nextEpoch; a busy link reaches 2^31 fetches in weeks."""
    return 1 if epoch >= _MAX_EPOCH else epoch + 1

#: A topic as a fetch names it: its id from Fetch v13, else its name
TopicKey = Union[uuid.UUID, str]
#: A partition of a session: its topic's key and its index
SessionKey = tuple[TopicKey, int]


@dataclass(frozen=True)
class SessionWakeKey:
    """What a session's parked fetch waits under besides its partitions' keys, for the appends to
    the partitions resting in it (no partition key is of this type)."""

    session_id: int


@dataclass(eq=False)
class SessionPartition:
    """A partition of a session: the fetch position the follower last named, and what the last
    answer said of the partition (None before it was answered in this session)."""

    request: FetchRequest.FetchPartition
    answered: tuple[int, int, int] | None = None  # high watermark, last stable offset, log start offset
    resting: bool = False  # see the module's doc

    def knows(self, offsets: tuple[int, int, int]) -> bool:
        """Whether the last answer told the follower these offsets (high watermark, last stable
        offset, log start offset): an incremental answer then leaves out the partition when it
        has no records and no error."""
        return self.answered == offsets


@dataclass(eq=False)
class FetchSession:
    session_id: int
    replica_id: int
    by_id: bool  # its topics are named by id (Fetch v13+), else by name
    next_epoch: int = 1
    partitions: dict[SessionKey, SessionPartition] = field(default_factory=dict)
    active: dict[SessionKey, SessionPartition] = field(default_factory=dict)  # those not resting
    last_fetch_ms: int = 0  # when a fetch of the session was last served
    next_full_serve_ms: int = 0
    closed: bool = False  # replaced by the follower's next session, or closed by it
    _by_topic: dict[TopicKey, list[SessionPartition]] | None = None
    _active_by_topic: dict[TopicKey, list[SessionPartition]] | None = None

    def __post_init__(self) -> None:
        self.wake_key = SessionWakeKey(self.session_id)

    def full_serve_due(self, now_ms: int) -> bool:
        """Whether this fetch serves resting partitions too (every `FULL_SERVE_INTERVAL_MS`)."""
        if now_ms < self.next_full_serve_ms:
            return False
        self.next_full_serve_ms = now_ms + FULL_SERVE_INTERVAL_MS
        return True

    @property
    def resting(self) -> bool:
        """Whether some partitions rest (a parked fetch then waits under `wake_key` too)."""
        return len(self.active) < len(self.partitions)

    def by_topic(self, resting_too: bool) -> dict[TopicKey, list[SessionPartition]]:
        """The partitions a fetch serves, grouped by topic: those not resting, or all; kept until
        the session's partitions change or one rests or wakes."""
        if resting_too:
            if self._by_topic is None:
                self._by_topic = _grouped(self.partitions)
            return self._by_topic
        if self._active_by_topic is None:
            self._active_by_topic = _grouped(self.active)
        return self._active_by_topic

    def add(self, key: SessionKey, request: FetchRequest.FetchPartition) -> None:
        self.partitions[key] = self.active[key] = SessionPartition(request)
        self._by_topic = self._active_by_topic = None

    def forget(self, key: SessionKey) -> None:
        if self.partitions.pop(key, None) is not None:
            self.active.pop(key, None)
            self._by_topic = self._active_by_topic = None

    def rest(self, key: SessionKey, cached: SessionPartition, partition: Partition, follower: RemoteReplica) -> None:
        """The partition is settled for the follower: leave it out of fetches until it changes."""
        cached.resting = True
        del self.active[key]
        self._active_by_topic = None
        partition.rest(self.replica_id, functools.partial(self._changed, key, cached, follower))

    def wake(self, key: SessionKey, cached: SessionPartition) -> None:
        """Serve a resting partition again (the follower named it, or a full serve is due: its
        fetch times move with that serve)."""
        if cached.resting:
            cached.resting = False
            self.active[key] = cached
            self._active_by_topic = None

    def wake_all(self) -> None:
        for key, cached in self.partitions.items():
            self.wake(key, cached)

    def _changed(self, key: SessionKey, cached: SessionPartition, follower: RemoteReplica) -> SessionWakeKey | None:
        """A resting partition changed: serve it from the next fetch, the follower caught up as
        of the session's last fetch."""
        if self.closed or not cached.resting or self.partitions.get(key) is not cached:
            return None
        follower.fetched_again_at_end(self.last_fetch_ms)
        self.wake(key, cached)
        return self.wake_key


def _grouped(partitions: dict[SessionKey, SessionPartition]) -> dict[TopicKey, list[SessionPartition]]:
    grouped: dict[TopicKey, list[SessionPartition]] = {}
    for (topic_key, _), cached in partitions.items():
        grouped.setdefault(topic_key, []).append(cached)
    return grouped


@dataclass
class SessionFetch:
    """One fetch within a session, as the leader serves it: the session's partitions (each with
    its fetch position), and whether the answer is full (a new session) or incremental."""

    session: FetchSession
    full: bool

    def select(self, key: SessionKey, data: FetchResponse.PartitionData) -> bool:
        """Whether the answer carries this partition; called once per answer sent, which then
        is what the follower knows of the partition."""
        cached = self.session.partitions.get(key)
        if cached is None:
            return True
        said = (data.high_watermark, data.last_stable_offset, data.log_start_offset)
        changed = cached.answered != said
        cached.answered = said
        return (self.full or changed or bool(data.records) or data.error_code != ErrorCode.NONE
                or data.diverging_epoch.epoch >= 0)


def _key(topic: FetchRequest.FetchTopic, by_id: bool) -> TopicKey:
    return topic.topic_id if by_id else topic.topic


class FetchSessions:
    """The leader's follower fetch sessions, one per follower at most."""

    def __init__(self, first_id: int = 1, max_sessions: int = MAX_SESSIONS) -> None:
        self._ids: Iterator[int] = itertools.count(first_id)
        self._by_replica: dict[int, FetchSession] = {}
        self._max_sessions = max_sessions

    def __len__(self) -> int:
        return len(self._by_replica)

    def open(self, request: FetchRequest, replica_id: int, by_id: bool) -> SessionFetch | None | FetchResponse:
        """What a follower's fetch asks of the sessions, taken once when it arrives: the session
        fetch to serve, None for a fetch without a session, or the error answer."""
        session_id, epoch = request.session_id, request.session_epoch
        current = self._by_replica.get(replica_id)
        if epoch == FINAL_EPOCH:
            if current is not None and current.session_id == session_id:
                self._close(replica_id)
            return None
        if epoch == INITIAL_EPOCH:
            if current is None and len(self._by_replica) >= self._max_sessions:
                return None  # answered without a session (session id 0): the follower goes on with full fetches
            session = FetchSession(next(self._ids), replica_id, by_id)
            for topic in request.topics:
                for partition in topic.partitions:
                    session.add((_key(topic, by_id), partition.partition), partition)
            self._close(replica_id)
            self._by_replica[replica_id] = session
            return SessionFetch(session, full=True)
        if current is None or current.session_id != session_id:
            return _error(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
        if epoch != current.next_epoch:
            return _error(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
        if by_id != current.by_id:  # a session's topics are named one way (Kafka's answer to a mix)
            self._close(replica_id)
            return _error(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
        current.next_epoch = next_epoch(current.next_epoch)
        partitions = current.partitions
        for topic in request.topics:
            key = _key(topic, by_id)
            for partition in topic.partitions:
                cached = partitions.get((key, partition.partition))
                if cached is None:
                    current.add((key, partition.partition), partition)
                else:
                    cached.request = partition
                    current.wake((key, partition.partition), cached)  # its fetch position moved: served in full
        for forgotten in request.forgotten_topics_data:
            key = forgotten.topic_id if by_id else forgotten.topic
            for index in forgotten.partitions:
                current.forget((key, index))
        return SessionFetch(current, full=False)

    def _close(self, replica_id: int) -> None:
        session = self._by_replica.pop(replica_id, None)
        if session is not None:
            session.closed = True


def _error(code: ErrorCode) -> FetchResponse:
    return FetchResponse(throttle_time_ms=0, error_code=code, session_id=INVALID_SESSION_ID, responses=[])
