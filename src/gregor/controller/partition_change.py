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
"Acceptable" is the caller's: unfenced and not in controlled shutdown. Replicas are taken in the
order of the target assignment.

A partition reassignment (KIP-455) is a target assignment too: while it runs, `replicas` is the
target followed by the replicas it removes, with `adding_replicas`/`removing_replicas` recorded.
Every change checks whether it completes the reassignment, as Kafka's builder does: once every
target replica is in the (target) ISR, the removed replicas leave the replicas and the ISR, the
lists are cleared and a leader that was being removed hands over to a target replica. A change
that drops replicas bumps the leader epoch, so removed replicas are fenced off the partition.
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
        self.target_replicas: tuple[int, ...] = current.replicas
        self.target_removing: tuple[int, ...] = current.removing_replicas
        self.target_adding: tuple[int, ...] = current.adding_replicas
        self.election = Election.ONLINE
        self.unclean = False

    def set_isr(self, isr: Sequence[int]) -> PartitionChange:
        self.target_isr = tuple(isr)
        return self

    def set_election(self, election: Election) -> PartitionChange:
        self.election = election
        return self

    def set_assignment(self, replicas: Sequence[int], removing: Sequence[int] = (),
                       adding: Sequence[int] = ()) -> PartitionChange:
        """The target replicas, and which of them a reassignment removes and adds."""
        self.target_replicas, self.target_removing = tuple(replicas), tuple(removing)
        self.target_adding = tuple(adding)
        return self

    def _complete_reassignment(self) -> None:
        """Kafka's `maybeCompleteReassignment`: done once every target replica is in the ISR
        (and some replica that stays is)."""
        removing = self.target_removing
        if not removing and not self.target_adding:
            return
        isr = tuple(replica for replica in self.target_isr if replica not in removing)
        replicas = tuple(replica for replica in self.target_replicas if replica not in removing)
        if not isr or not replicas or not set(replicas) <= set(isr):
            return
        self.target_isr, self.target_replicas = isr, replicas
        self.target_removing = self.target_adding = ()

    def _valid(self, replica: int) -> bool:
        return replica in self.target_isr and self.acceptable(replica)

    def _elect(self) -> int:
        current, replicas = self.current, self.target_replicas
        if self.election is Election.PREFERRED and replicas and self._valid(replicas[0]):
            return replicas[0]
        if current.leader != NO_LEADER and self._valid(current.leader):
            return current.leader
        for replica in replicas:
            if self._valid(replica):
                return replica
        if self.unclean_allowed:
            for replica in replicas:
                if self.acceptable(replica):
                    self.unclean = True
                    return replica
        return NO_LEADER

    def build(self) -> PartitionChangeRecord | None:
        """The record for the change, or None when the partition would stay as it is."""
        current = self.current
        self._complete_reassignment()
        leader = self._elect()
        isr = (leader,) if self.unclean else self.target_isr
        if not isr and current.isr:
            isr = current.isr  # the last ISR member stays, so a later clean election can find it
        record = PartitionChangeRecord(partition_id=self.partition, topic_id=self.topic_id)
        if leader != current.leader or not set(current.replicas) <= set(self.target_replicas):
            record.leader = leader  # dropped replicas also bump the leader epoch (fencing them)
        if isr != current.isr:
            record.isr = list(isr)
        if self.target_replicas != current.replicas:
            record.replicas = list(self.target_replicas)
        if self.target_removing != current.removing_replicas:
            record.removing_replicas = list(self.target_removing)
        if self.target_adding != current.adding_replicas:
            record.adding_replicas = list(self.target_adding)
        changed = record.leader != NO_LEADER_CHANGE or any(
            value is not None for value in (record.isr, record.replicas, record.removing_replicas,
                                            record.adding_replicas))
        return record if changed else None
