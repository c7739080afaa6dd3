"""What a leader knows of one follower: its log end offset ("remote LEO") and when it was caught up.

The remote LEO is the fetch offset of the follower's latest fetch: a follower fetches from its
own log end, so the offset it asks for is what it already holds. "Caught up" follows Kafka's
Replica.updateFetchState: a fetch reaching the leader's log end offset counts from its own
time; one reaching the leader end offset seen at the previous fetch counts from the previous
fetch's time (the follower had everything the leader had then).
"""

from __future__ import annotations

UNKNOWN_OFFSET = -1


class RemoteReplica:
    __slots__ = ("broker_id", "log_end_offset", "last_caught_up_ms", "last_fetch_ms", "last_fetch_leader_end_offset")

    def __init__(self, broker_id: int, in_sync_since_ms: int | None) -> None:
        self.broker_id = broker_id
        self.log_end_offset = UNKNOWN_OFFSET
        self.last_caught_up_ms = in_sync_since_ms
        self.last_fetch_ms: int | None = None
        self.last_fetch_leader_end_offset = UNKNOWN_OFFSET

    def update_fetch_state(self, fetch_offset: int, leader_end_offset: int, now_ms: int) -> None:
        if fetch_offset >= leader_end_offset:
            self.last_caught_up_ms = max(self.last_caught_up_ms or now_ms, now_ms)
        elif fetch_offset >= self.last_fetch_leader_end_offset >= 0 and self.last_fetch_ms is not None:
            self.last_caught_up_ms = max(self.last_caught_up_ms or self.last_fetch_ms, self.last_fetch_ms)
        self.log_end_offset = fetch_offset
        self.last_fetch_leader_end_offset = leader_end_offset
        self.last_fetch_ms = now_ms

    def fetched_again_at_end(self, now_ms: int) -> None:
        """`update_fetch_state` of a fetch from the log end this follower already had, while the
        leader's log end is still that offset: only the times move."""
        if self.last_caught_up_ms is None or now_ms > self.last_caught_up_ms:
            self.last_caught_up_ms = now_ms
        self.last_fetch_ms = now_ms

    def is_caught_up(self, leader_end_offset: int, now_ms: int, max_lag_ms: int) -> bool:
        """At the leader's log end, or caught up within `replica.lag.time.max.ms`."""
        if self.log_end_offset == leader_end_offset:
            return True
        return self.last_caught_up_ms is not None and now_ms - self.last_caught_up_ms <= max_lag_ms

    def __repr__(self) -> str:
        return (f"RemoteReplica({self.broker_id}, leo={self.log_end_offset}, "
                f"caught_up={self.last_caught_up_ms}, fetched={self.last_fetch_ms})")
