"""A member of a KIP-848 consumer group (`group.protocol=consumer`), as a sans-IO state machine.

Java's ConsumerMembershipManager and librdkafka's cgrp state, reduced to what a member decides:
which ConsumerGroupHeartbeat to send and when, what the coordinator's answer means, and what
the application must do to reach the target assignment (revoke, then assign). The caller sends
the requests, resolves topic ids through metadata and calls the rebalance listener; this module
takes the answers and the current time (monotonic seconds) and reads no clock.

The member id is generated here (a UUID, as ConsumerGroupHeartbeat v1 requires) and kept for the
life of the consumer, across fencing and rejoining, as Java keeps it.

Epochs: 0 joins (or rejoins after being fenced, having lost what it owned); the coordinator's
epoch thereafter; -1 leaves; -2 leaves as a static member (keeping its place for its instance id).
"""

from __future__ import annotations

import enum
import uuid
from dataclasses import dataclass
from typing import Any, Mapping

from gregor.client.errors import KafkaException, error_for
from gregor.client.network import TopicPartition
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ConsumerGroupHeartbeatRequest

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2


class MemberState(enum.Enum):
    UNSUBSCRIBED = "unsubscribed"
    JOINING = "joining"
    RECONCILING = "reconciling"
    ACKNOWLEDGING = "acknowledging"
    STABLE = "stable"
    FENCED = "fenced"
    LEAVING = "leaving"
    FATAL = "fatal"


# Legal transitions, as Java's MemberState documents them.
TRANSITIONS: dict[MemberState, frozenset[MemberState]] = {
    MemberState.UNSUBSCRIBED: frozenset({MemberState.JOINING, MemberState.FATAL}),
    MemberState.JOINING: frozenset({MemberState.RECONCILING, MemberState.STABLE, MemberState.FENCED,
                                    MemberState.LEAVING, MemberState.FATAL, MemberState.UNSUBSCRIBED}),
    MemberState.RECONCILING: frozenset({MemberState.ACKNOWLEDGING, MemberState.STABLE, MemberState.FENCED,
                                        MemberState.LEAVING, MemberState.FATAL, MemberState.RECONCILING}),
    MemberState.ACKNOWLEDGING: frozenset({MemberState.STABLE, MemberState.RECONCILING, MemberState.FENCED,
                                          MemberState.LEAVING, MemberState.FATAL, MemberState.ACKNOWLEDGING}),
    MemberState.STABLE: frozenset({MemberState.RECONCILING, MemberState.FENCED, MemberState.LEAVING,
                                   MemberState.FATAL, MemberState.STABLE}),
    MemberState.FENCED: frozenset({MemberState.JOINING, MemberState.LEAVING, MemberState.UNSUBSCRIBED,
                                   MemberState.FATAL}),
    MemberState.LEAVING: frozenset({MemberState.UNSUBSCRIBED, MemberState.FATAL}),
    MemberState.FATAL: frozenset(),
}

# States in which the member heartbeats.
IN_GROUP = frozenset({MemberState.JOINING, MemberState.RECONCILING, MemberState.ACKNOWLEDGING,
                       MemberState.STABLE, MemberState.LEAVING})
_FENCING_ERRORS = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})
_RETRIABLE_ERRORS = frozenset({ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                               ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.REQUEST_TIMED_OUT})


@dataclass(frozen=True)
class Reconciliation:
    """One step toward the target: give up `revoked` (commit, listener), then own `target`
    (`assigned` are the new ones); `epoch` is the member epoch the step was made for. The first
    step after joining may change nothing: on_partitions_assigned is still called (with no
    partitions), as Java's consumer calls it after every join."""

    epoch: int
    owned: frozenset[TopicPartition]
    target: frozenset[TopicPartition]
    target_seq: int

    @property
    def revoked(self) -> frozenset[TopicPartition]:
        return self.owned - self.target

    @property
    def assigned(self) -> frozenset[TopicPartition]:
        return self.target - self.owned


@dataclass(frozen=True)
class _Sent:
    """The fields of the last heartbeat the coordinator answered (unchanged ones go as null)."""

    topics: tuple[str, ...] | None
    regex: str | None
    owned: frozenset[TopicPartition]


class ConsumerMembership:
    """The member's identity, epoch, target and owned partitions, and its heartbeat schedule."""

    def __init__(self, group_id: str, *, instance_id: str | None, rack_id: str | None,
                 rebalance_timeout_ms: int, server_assignor: str | None, retry_backoff_ms: int) -> None:
        self.group_id = group_id
        self.instance_id = instance_id
        self.rack_id = rack_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.server_assignor = server_assignor
        self.retry_backoff = retry_backoff_ms / 1000
        self.member_id = str(uuid.uuid4())
        self.member_epoch = JOIN_EPOCH
        self.state = MemberState.UNSUBSCRIBED
        self.heartbeat_interval = 0.0
        self.topics: tuple[str, ...] | None = None
        self.regex: str | None = None
        self.owned: frozenset[TopicPartition] = frozenset()
        self.target_ids: dict[Any, frozenset[int]] = {}
        self.unresolved: frozenset[Any] = frozenset()
        self.fatal: KafkaException | None = None
        self.in_flight = False
        self.next_heartbeat = 0.0
        self._sent: _Sent | None = None
        self._pending_sent: _Sent | None = None
        self._topic_ids: dict[str, Any] = {}
        self._target_seq = 0
        self._reconciling = False
        self._joined = False  # the first target since joining is always a step (its listener call)

    # -- transitions --

    def _to(self, state: MemberState) -> None:
        if state not in TRANSITIONS[self.state]:
            raise AssertionError(f"consumer group member: {self.state.value} -> {state.value} is not a transition")
        self.state = state

    def subscribe(self, topics: tuple[str, ...] | None, regex: str | None, now: float) -> None:
        """A new subscription (names or a regex): join, or tell the coordinator at once."""
        self.topics, self.regex = (tuple(sorted(topics)) if topics is not None else None), regex
        if self.state in (MemberState.UNSUBSCRIBED, MemberState.FENCED):
            self._join()
        self.next_heartbeat = now

    def _join(self) -> None:
        self._to(MemberState.JOINING)
        self.member_epoch = JOIN_EPOCH
        self._sent = None
        self._joined = True

    def leave(self, now: float) -> bool:
        """Leave the group with the next heartbeat (epoch -1, or -2 for a static member); False
        when the coordinator does not know the member and nothing need be sent."""
        known = self.state in IN_GROUP and not (self.state is MemberState.JOINING and self._sent is None)
        if not known:
            if MemberState.UNSUBSCRIBED in TRANSITIONS[self.state]:
                self._to(MemberState.UNSUBSCRIBED)
            self.owned = frozenset()
            return False
        self._to(MemberState.LEAVING)
        self.member_epoch = STATIC_LEAVE_EPOCH if self.instance_id is not None else LEAVE_EPOCH
        self.next_heartbeat = now
        return True

    # -- heartbeats --

    def heartbeat_due(self, now: float) -> bool:
        return self.state in IN_GROUP and not self.in_flight and now >= self.next_heartbeat

    def heartbeat(self, now: float) -> ConsumerGroupHeartbeatRequest:
        """The next heartbeat (the caller sends it and reports the answer or the failure)."""
        self.in_flight = True
        sent = self._sent
        joining = self.member_epoch == JOIN_EPOCH
        leaving = self.state is MemberState.LEAVING
        full = sent is None or joining
        topics_changed = sent is None or full or sent.topics != self.topics or sent.regex != self.regex
        owned_changed = sent is None or full or sent.owned != self.owned
        request = ConsumerGroupHeartbeatRequest(
            group_id=self.group_id, member_id=self.member_id, member_epoch=self.member_epoch,
            instance_id=self.instance_id, rack_id=self.rack_id if full and not leaving else None,
            rebalance_timeout_ms=self.rebalance_timeout_ms if full and not leaving else -1,
            subscribed_topic_names=list(self.topics) if topics_changed and self.topics is not None and not leaving
            else None,
            subscribed_topic_regex=self.regex if topics_changed and self.regex is not None and not leaving else None,
            server_assignor=self.server_assignor if full and not leaving else None,
            topic_partitions=None if leaving or not owned_changed else self._owned_by_id())
        self._pending_sent = _Sent(self.topics, self.regex, self.owned)
        return request

    def _owned_by_id(self) -> list[ConsumerGroupHeartbeatRequest.TopicPartitions]:
        by_topic: dict[str, list[int]] = {}
        for partition in self.owned:
            by_topic.setdefault(partition.topic, []).append(partition.partition)
        return [ConsumerGroupHeartbeatRequest.TopicPartitions(topic_id=self._topic_ids[topic], partitions=sorted(indexes))
                for topic, indexes in sorted(by_topic.items())]

    def on_failure(self, now: float) -> None:
        """The heartbeat got no answer: send a full one after the backoff."""
        self.in_flight = False
        self._sent = None
        self.next_heartbeat = now + self.retry_backoff

    def on_response(self, response: Any, now: float) -> None:
        """Take the coordinator's answer to the heartbeat in flight."""
        self.in_flight = False
        code = response.error_code
        if self.state is MemberState.LEAVING:
            if code in _RETRIABLE_ERRORS:
                self.next_heartbeat = now + self.retry_backoff
                return
            self._to(MemberState.UNSUBSCRIBED)
            self.owned = frozenset()
            self.target_ids = {}
            return
        if code == ErrorCode.NONE:
            self._sent = acknowledged = self._pending_sent
            if response.member_id:
                self.member_id = response.member_id
            self.member_epoch = response.member_epoch
            if response.heartbeat_interval_ms > 0:
                self.heartbeat_interval = response.heartbeat_interval_ms / 1000
            self.next_heartbeat = now + self.heartbeat_interval
            if response.assignment is not None:
                self.target_ids = {item.topic_id: frozenset(item.partitions)
                                   for item in response.assignment.topic_partitions}
                self._target_seq += 1
                self._to(MemberState.RECONCILING)
            elif self.state is MemberState.JOINING or self.state is MemberState.ACKNOWLEDGING \
                    and acknowledged is not None and acknowledged.owned == self.owned:
                self._to(MemberState.STABLE)
            elif self.state is MemberState.ACKNOWLEDGING:
                self.next_heartbeat = now  # reconciled while this heartbeat was in flight
            return
        if code in _FENCING_ERRORS:
            # The partitions may already be another member's: the application is told they are
            # lost, then the member joins again with epoch 0 (`rejoin`).
            self._to(MemberState.FENCED)
            self._sent = None
            self.target_ids = {}
            return
        if code in _RETRIABLE_ERRORS:
            self._sent = None
            self.next_heartbeat = now + self.retry_backoff
            return
        self.fatal = error_for(code, f"ConsumerGroupHeartbeat of group {self.group_id!r}: "
                                     f"{response.error_message or error_for(code).name}")
        self._to(MemberState.FATAL)

    # -- reconciliation (the application's side) --

    def reconciliation(self, topic_names: Mapping[Any, str]) -> Reconciliation | None:
        """The step toward the target to run now, if any; topic ids not in `topic_names` yet are
        left in `unresolved` (the caller refreshes metadata and asks again)."""
        if self.state is not MemberState.RECONCILING or self._reconciling:
            return None
        target: set[TopicPartition] = set()
        unresolved = set()
        for topic_id, partitions in self.target_ids.items():
            name = topic_names.get(topic_id)
            if name is None:
                unresolved.add(topic_id)
                continue
            target.update(TopicPartition(name, index) for index in partitions)
        self.unresolved = frozenset(unresolved)
        self._topic_ids.update({name: topic_id for topic_id, name in topic_names.items()
                                if topic_id in self.target_ids})
        if unresolved:
            # Keep what is owned in topics not resolved yet, as Java waits for their metadata.
            owned_unresolved = {p for p in self.owned if p.topic not in topic_names.values()}
            target |= owned_unresolved
        step = Reconciliation(self.member_epoch, self.owned, frozenset(target), self._target_seq)
        if not step.revoked and not step.assigned and not (self._joined and not unresolved):
            if not unresolved:
                self._to(MemberState.ACKNOWLEDGING if self._sent is None or self._sent.owned != self.owned
                         else MemberState.STABLE)
            return None
        self._reconciling = True
        self._joined = False
        return step

    def reconciled(self, step: Reconciliation, now: float) -> None:
        """The application ran `step`: acknowledge with the next heartbeat, at once."""
        self._reconciling = False
        if self.state not in (MemberState.RECONCILING, MemberState.ACKNOWLEDGING, MemberState.STABLE):
            return  # fenced or leaving meanwhile: the fencing or leave decides what is owned
        self.owned = step.target
        behind = self.unresolved or step.target_seq != self._target_seq
        self._to(MemberState.RECONCILING if behind else MemberState.ACKNOWLEDGING)
        self.next_heartbeat = now

    @property
    def fenced(self) -> bool:
        """Fenced: the application reports what it owned lost, then calls `rejoin`."""
        return self.state is MemberState.FENCED

    def rejoin(self, now: float) -> None:
        """After the application was told of its lost partitions: join again with epoch 0."""
        self.owned = frozenset()
        self._reconciling = False
        if self.topics is None and self.regex is None:
            self._to(MemberState.UNSUBSCRIBED)
            return
        self._join()
        self.next_heartbeat = now

    def unsubscribed(self) -> None:
        """Forget the subscription once the member left."""
        self.topics = self.regex = None

    @property
    def can_commit(self) -> bool:
        """Whether offsets may be committed with this member's epoch (it is in the group)."""
        return self.state in (MemberState.RECONCILING, MemberState.ACKNOWLEDGING, MemberState.STABLE)
