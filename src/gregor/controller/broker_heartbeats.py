"""Broker sessions on the active controller (Kafka's BrokerHeartbeatManager and the heartbeat
half of ClusterControlManager), sans-IO: every call takes the current time.

A broker registers fenced. Its heartbeats carry the metadata offset it has replayed; once that
reaches the offset of its own registration it has caught up and is unfenced, so it never leads
a partition before it knows the partition exists. A broker whose heartbeats stop for
`broker.session.timeout.ms` is fenced: it leaves the ISRs and its leaderships move. A heartbeat
asking to shut down starts a controlled shutdown: the broker stops being an acceptable leader,
its leaderships and ISR memberships move, and it is told it may stop once it leads nothing.

Sessions live only in the active controller's memory, as in Kafka: a new active controller
gives every registered broker a full session from the moment it takes over (`take_over`), also
when it had been the active controller before: the contacts it kept from that earlier term are
stale (the brokers have been heartbeating to another controller since).
"""

from __future__ import annotations

from dataclasses import dataclass

from gregor.controller.replication_control import UncleanPolicy, fence_broker, unfence_broker
from gregor.metadata.image import MetadataImage
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import Message
from gregor.protocol.messages.metadata_records.broker_registration_change_record import (
    BrokerRegistrationChangeRecord,
)

DEFAULT_SESSION_TIMEOUT_MS = 9000


@dataclass(frozen=True)
class HeartbeatReply:
    """BrokerHeartbeat's answer and the records that the heartbeat commits first."""

    error: ErrorCode = ErrorCode.NONE
    is_caught_up: bool = False
    is_fenced: bool = True
    should_shut_down: bool = False
    records: tuple[Message, ...] = ()


class BrokerHeartbeats:
    def __init__(self, session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS) -> None:
        self.session_timeout_ms = session_timeout_ms
        self._last_contact: dict[int, int] = {}
        self._heard: set[int] = set()  # brokers that registered or heartbeat to this controller
        self._term: int | None = None  # the quorum epoch these sessions belong to

    def take_over(self, leader_epoch: int) -> None:
        """This node is the active controller in `leader_epoch`: sessions from an earlier term are
        forgotten, so every broker's session starts afresh (at the next `expired`). Without it, a
        controller elected again fenced every broker at once on the contacts of its previous term,
        and clients that then saw a Metadata answer listing no broker dropped every connection
        (found by the fault harness: librdkafka's consumers stayed without a coordinator)."""
        if leader_epoch != self._term:
            self._term = leader_epoch
            self._last_contact.clear()
            self._heard.clear()

    def registered(self, broker_id: int, now_ms: int) -> None:
        """A (re-)registration starts a new session."""
        self._last_contact[broker_id] = now_ms
        self._heard.add(broker_id)

    def session_active(self, broker_id: int, now_ms: int) -> bool:
        last = self._last_contact.get(broker_id)
        return last is not None and now_ms - last <= self.session_timeout_ms

    def heard_within_session(self, broker_id: int, now_ms: int) -> bool:
        """The broker's session is active and it was this controller that heard from it: not
        only the session a new controller grants every registered broker at takeover, which
        keeps them from being fenced before they can heartbeat but says nothing of whether the
        process behind the registration is alive (after a combined node's restart it is not)."""
        return broker_id in self._heard and self.session_active(broker_id, now_ms)

    def heartbeat(self, image: MetadataImage, broker_id: int, broker_epoch: int, metadata_offset: int,
                  want_fence: bool, want_shut_down: bool, unclean_allowed: UncleanPolicy,
                  now_ms: int) -> HeartbeatReply:
        broker = image.brokers.get(broker_id)
        if broker is None:
            return HeartbeatReply(ErrorCode.BROKER_ID_NOT_REGISTERED)
        if broker.epoch != broker_epoch:
            return HeartbeatReply(ErrorCode.STALE_BROKER_EPOCH)
        self._last_contact[broker_id] = now_ms
        self._heard.add(broker_id)
        caught_up = metadata_offset >= broker_epoch
        if want_shut_down:
            return self._controlled_shutdown(image, broker_id, caught_up, unclean_allowed)
        if want_fence:
            return HeartbeatReply(is_caught_up=caught_up, is_fenced=True,
                                  records=tuple(fence_broker(image, broker_id, unclean_allowed)))
        if broker.fenced and caught_up:
            return HeartbeatReply(is_caught_up=True, is_fenced=False,
                                  records=tuple(unfence_broker(image, broker_id, unclean_allowed)))
        return HeartbeatReply(is_caught_up=caught_up, is_fenced=broker.fenced)

    def _controlled_shutdown(self, image: MetadataImage, broker_id: int, caught_up: bool,
                             unclean_allowed: UncleanPolicy) -> HeartbeatReply:
        """Move the broker's leaderships away; it may stop once it leads no partition."""
        broker = image.brokers[broker_id]
        leads = any(partition.leader == broker_id for topic in image.topics.values()
                    for partition in topic.partitions.values())
        if broker.fenced or not leads:
            return HeartbeatReply(is_caught_up=caught_up, is_fenced=True, should_shut_down=True,
                                  records=tuple(fence_broker(image, broker_id, unclean_allowed)))
        records: list[Message] = []
        if not broker.in_controlled_shutdown:
            records.append(BrokerRegistrationChangeRecord(broker_id=broker_id, broker_epoch=broker.epoch,
                                                          in_controlled_shutdown=1))
        fencing = fence_broker(image, broker_id, unclean_allowed)
        records.extend(fencing[1:])  # its partitions move now; the broker itself is fenced when it stops
        return HeartbeatReply(is_caught_up=caught_up, is_fenced=False, records=tuple(records))

    def controller_paused(self, paused_ms: int, now_ms: int) -> None:
        """This controller ran nothing for `paused_ms` (a stopped process, a starved one): the
        brokers' silence meanwhile is not theirs, their heartbeats wait unread in its sockets, so
        every session is lengthened by it. Kafka's controller counts it against the brokers (with
        9 s sessions it seldom matters); with the fault harness's 1.5 s sessions a controller
        stopped for 1.5 s fenced every broker, Metadata answers listed none, and librdkafka
        dropped every broker handle."""
        for broker_id, last in self._last_contact.items():
            self._last_contact[broker_id] = min(last + paused_ms, now_ms)

    def next_check(self, image: MetadataImage, now_ms: int) -> int | None:
        """When the active controller should next look at the sessions: at `next_expiry`, and
        at least twice per session timeout while a broker is unfenced, so that a pause of the
        controller shows as a late timer (`controller_paused`) before the sessions it spans
        are judged."""
        expiry = self.next_expiry(image)
        return None if expiry is None else min(expiry, now_ms + self.session_timeout_ms // 2)

    def next_expiry(self, image: MetadataImage) -> int | None:
        """When `expired` may next name a broker: the earliest end of an unfenced broker's session
        (0, at once, for one this controller has not heard from, so that its session starts)."""
        due = None
        for broker_id, broker in image.brokers.items():
            if broker.fenced:
                continue
            last = self._last_contact.get(broker_id)
            at = 0 if last is None else last + self.session_timeout_ms + 1
            due = at if due is None else min(due, at)
        return due

    def stale_broker(self, image: MetadataImage, now_ms: int) -> int | None:
        """The unfenced broker whose session timed out longest ago, if any (brokers never heard
        from by this controller start their session now).

        One at a time, as Kafka's controller fences (`maybeFenceOneStaleBroker`): after a pause of
        the controller itself every session looks expired, while the brokers' heartbeats wait
        unread in its sockets; fencing them all in one pass left Metadata answers listing no
        broker, and librdkafka then drops every broker handle (an assign-mode consumer of the
        fault harness read nothing more for an hour). Between two fencings those heartbeats get in."""
        stale: tuple[int, int] | None = None
        for broker_id, broker in image.brokers.items():
            if broker.fenced:
                continue
            last = self._last_contact.get(broker_id)
            if last is None:
                self._last_contact[broker_id] = now_ms
            elif not self.session_active(broker_id, now_ms) and (stale is None or last < stale[0]):
                stale = (last, broker_id)
        return None if stale is None else stale[1]
