"""A share group member (KIP-932), as a sans-IO state machine of ShareGroupHeartbeat.

Java's ShareMembershipManager reduced to what a member decides: the member id is generated here
(a UUID) and kept across rejoins; epoch 0 joins, the coordinator's epochs follow, -1 leaves. A
share group has no revocation protocol: the assignment the coordinator sends is taken as it
comes (records are handed out per record by the share-partition leaders, so two members never
hold the same record even while they share a partition). A fenced member (FENCED_MEMBER_EPOCH,
UNKNOWN_MEMBER_ID) joins again at once with epoch 0. The caller sends the requests and passes
the answers and the current time (monotonic seconds).
"""

from __future__ import annotations

import enum
import uuid
from typing import Any, Mapping

from gregor.client.errors import KafkaException, error_for
from gregor.client.network import TopicPartition
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ShareGroupHeartbeatRequest

JOIN_EPOCH = 0
LEAVE_EPOCH = -1


class ShareMemberState(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    STABLE = "stable"
    LEAVING = "leaving"
    FATAL = "fatal"


TRANSITIONS: dict[ShareMemberState, frozenset[ShareMemberState]] = {
    ShareMemberState.UNSUBSCRIBED: frozenset({ShareMemberState.JOINING}),
    ShareMemberState.JOINING: frozenset({ShareMemberState.STABLE, ShareMemberState.JOINING,
                                         ShareMemberState.LEAVING, ShareMemberState.UNSUBSCRIBED,
                                         ShareMemberState.FATAL}),
    ShareMemberState.STABLE: frozenset({ShareMemberState.STABLE, ShareMemberState.JOINING,
                                        ShareMemberState.LEAVING, ShareMemberState.FATAL}),
    ShareMemberState.LEAVING: frozenset({ShareMemberState.UNSUBSCRIBED}),
    ShareMemberState.FATAL: frozenset(),
}
IN_GROUP = frozenset({ShareMemberState.JOINING, ShareMemberState.STABLE, ShareMemberState.LEAVING})
_FENCING = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})
_RETRIABLE = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                        ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.REQUEST_TIMED_OUT})


class ShareMembership:
    """The member's identity, epoch, subscription, assignment (by topic id) and heartbeat schedule."""

    def __init__(self, group_id: str, *, rack_id: str | None, retry_backoff_ms: int) -> None:
        self.group_id = group_id
        self.rack_id = rack_id
        self.retry_backoff = retry_backoff_ms / 1000
        self.member_id = str(uuid.uuid4())
        self.member_epoch = JOIN_EPOCH
        self.state = ShareMemberState.UNSUBSCRIBED
        self.topics: tuple[str, ...] = ()
        self.assignment_ids: dict[Any, frozenset[int]] = {}
        self.heartbeat_interval = 0.0
        self.next_heartbeat = 0.0
        self.in_flight = False
        self.fatal: KafkaException | None = None
        self._sent_topics: tuple[str, ...] | None = None
        self._pending_topics: tuple[str, ...] | None = None

    def _to(self, state: ShareMemberState) -> None:
        if state not in TRANSITIONS[self.state]:
            raise AssertionError(f"share group member: {self.state.value} -> {state.value} is not a transition")
        self.state = state

    def subscribe(self, topics: tuple[str, ...], now: float) -> None:
        self.topics = tuple(sorted(set(topics)))
        if self.state is ShareMemberState.UNSUBSCRIBED:
            self._join()
        self.next_heartbeat = now

    def _join(self) -> None:
        self._to(ShareMemberState.JOINING)
        self.member_epoch = JOIN_EPOCH
        self._sent_topics = None

    def leave(self, now: float) -> bool:
        """Leave with the next heartbeat (epoch -1); False when nothing need be sent."""
        if self.state not in IN_GROUP or self.state is ShareMemberState.JOINING and self._sent_topics is None:
            if ShareMemberState.UNSUBSCRIBED in TRANSITIONS[self.state]:
                self._to(ShareMemberState.UNSUBSCRIBED)
            self.assignment_ids = {}
            return False
        if self.state is not ShareMemberState.LEAVING:
            self._to(ShareMemberState.LEAVING)
        self.member_epoch = LEAVE_EPOCH
        self.next_heartbeat = now
        return True

    def heartbeat_due(self, now: float) -> bool:
        return self.state in IN_GROUP and not self.in_flight and now >= self.next_heartbeat

    def heartbeat(self, now: float) -> ShareGroupHeartbeatRequest:
        self.in_flight = True
        full = self._sent_topics is None or self.member_epoch == JOIN_EPOCH
        leaving = self.state is ShareMemberState.LEAVING
        send_topics = not leaving and (full or self._sent_topics != self.topics)
        self._pending_topics = self.topics
        return ShareGroupHeartbeatRequest(
            group_id=self.group_id, member_id=self.member_id, member_epoch=self.member_epoch,
            rack_id=self.rack_id if full and not leaving else None,
            subscribed_topic_names=list(self.topics) if send_topics else None)

    def on_failure(self, now: float) -> None:
        self.in_flight = False
        self._sent_topics = None
        self.next_heartbeat = now + self.retry_backoff

    def on_response(self, response: Any, now: float) -> None:
        self.in_flight = False
        code = response.error_code
        if self.state is ShareMemberState.LEAVING:
            if code in _RETRIABLE:
                self.next_heartbeat = now + self.retry_backoff
                return
            self._to(ShareMemberState.UNSUBSCRIBED)
            self.assignment_ids = {}
            return
        if code == ErrorCode.NONE:
            self._sent_topics = self._pending_topics
            if response.member_id:
                self.member_id = response.member_id
            self.member_epoch = response.member_epoch
            if response.heartbeat_interval_ms > 0:
                self.heartbeat_interval = response.heartbeat_interval_ms / 1000
            self.next_heartbeat = now + self.heartbeat_interval
            if response.assignment is not None:
                self.assignment_ids = {item.topic_id: frozenset(item.partitions)
                                       for item in response.assignment.topic_partitions}
            self._to(ShareMemberState.STABLE)
            return
        if code in _FENCING:
            self.assignment_ids = {}
            self._join()
            self.next_heartbeat = now
            return
        if code in _RETRIABLE:
            self._sent_topics = None
            self.next_heartbeat = now + self.retry_backoff
            return
        self.fatal = error_for(code, f"ShareGroupHeartbeat of group {self.group_id!r}: "
                                     f"{response.error_message or error_for(code).name}")
        self._to(ShareMemberState.FATAL)

    def assignment(self, topic_names: Mapping[Any, str]) -> tuple[frozenset[TopicPartition], bool]:
        """The assigned partitions whose topic ids `topic_names` names, and whether some are unnamed yet."""
        partitions = {TopicPartition(topic_names[topic_id], index)
                      for topic_id, indexes in self.assignment_ids.items() if topic_id in topic_names
                      for index in indexes}
        return frozenset(partitions), any(topic_id not in topic_names for topic_id in self.assignment_ids)
