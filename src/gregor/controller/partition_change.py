"""The change to one partition that a controller decision implies (Kafka's PartitionChangeBuilder).

Every decision about a partition — a broker fenced or back, an ISR change a leader proposed, a
preferred-leader election — is phrased as a target (ISR, replicas, which election) and turned
here into one PartitionChangeRecord carrying only what changed, or None when nothing does.
Replaying the record bumps the partition epoch, and the leader epoch when the leader changes
(`gregor.metadata.delta.merge_partition_change`), so every replica can tell stale state from new.

Leader election, as the seeds and Kafka describe it:
- ONLINE (a leader is needed or the current one is no longer acceptable): keep the current
  leader while it is acceptable and in the ISR; else the first replica, in assignment order,
  that is in the ISR and acceptable (the preferred replica first); else, only when unclean
  election is allowed, the first acceptable replica outside the ISR, which becomes the whole ISR
  (records it lacks are lost: that is what "unclean" means); else no leader (-1), the ISR kept,
  until an ISR member comes back.
- PREFERRED: the first replica if it is acceptable and in the ISR, else as ONLINE.
"Acceptable" is the caller's: unfenced and not in controlled shutdown.
"""

from __future__ import annotations

import enum
import uuid
from typing import Callable, Sequence

from gregor.metadata.image import PartitionRegistration
from gregor.protocol.messages.metadata_records.partition_change_record import PartitionChangeRecord

NO_LEADER = -1
NO_LEADER_CHANGE = -2


class Election(enum.Enum):
    ONLINE = "online"
    PREFERRED = "preferred"


class PartitionChange:
    """The target state of one partition, built into a record by `build`."""

    def __init__(self, current: PartitionRegistration, topic_id: uuid.UUID, partition: int,
                 acceptable: Callable[[int], bool], unclean_allowed: bool = False) -> None:
        self.current = current
        self.topic_id = topic_id
        self.partition = partition
        self.acceptable = acceptable
        self.unclean_allowed = unclean_allowed
        self.target_isr: tuple[int, ...] = current.isr
        self.election = Election.ONLINE
        self.unclean = False

    def set_isr(self, isr: Sequence[int]) -> PartitionChange:
        self.target_isr = tuple(isr)
        return self

    def set_election(self, election: Election) -> PartitionChange:
        self.election = election
        return self

    def _elect(self) -> int:
        current, isr = self.current, self.target_isr
        if self.election is Election.PREFERRED and current.replicas:
            preferred = current.replicas[0]
            if preferred in isr and self.acceptable(preferred):
                return preferred
        if current.leader != NO_LEADER and current.leader in isr and self.acceptable(current.leader):
            return current.leader
        for replica in current.replicas:
            if replica in isr and self.acceptable(replica):
                return replica
        if self.unclean_allowed:
            for replica in current.replicas:
                if self.acceptable(replica):
                    self.unclean = True
                    return replica
        return NO_LEADER

    def build(self) -> PartitionChangeRecord | None:
        """The record for the change, or None when the partition would stay as it is."""
        current = self.current
        leader = self._elect()
        isr = (leader,) if self.unclean else self.target_isr
        if not isr and current.isr:
            isr = current.isr  # the last ISR member stays, so a later clean election can find it
        record = PartitionChangeRecord(partition_id=self.partition, topic_id=self.topic_id)
        changed = False
        if leader != current.leader:
            record.leader = leader
            changed = True
        if isr != current.isr:
            record.isr = list(isr)
            changed = True
        return record if changed else None
