"""The controller's part in replicating one partition, as KRaft's ReplicationControlManager does it.

It holds the partition state (leader, leader epoch, ISR, partition epoch) and the set of live
(unfenced) brokers. A fenced broker leaves the ISR unless it is the last member; a fenced leader
is replaced by the first live ISR member in replica order, or by any live replica when unclean
election is enabled, or by nobody (leader -1) until an ISR member comes back. AlterPartition
proposals are checked (leader and leader epoch, partition epoch, live members) and applied.
Every change bumps the partition epoch; a leader change bumps the leader epoch.
"""

from __future__ import annotations

from dataclasses import replace

from gregor.metadata.image import PartitionRegistration
from gregor.protocol.error_codes import ErrorCode
from gregor.replication.partition import NO_LEADER


class ControllerStub:
    def __init__(self, replicas: tuple[int, ...], unclean_election: bool = False) -> None:
        self.unclean_election = unclean_election
        self.live: set[int] = set(replicas)
        self.state = PartitionRegistration(replicas=replicas, isr=replicas, leader=replicas[0], leader_epoch=0,
                                           partition_epoch=0)
        self.unclean_elections = 0

    def _change(self, **fields) -> None:
        self.state = replace(self.state, partition_epoch=self.state.partition_epoch + 1, **fields)

    def fence(self, broker: int) -> bool:
        """The broker missed its session or restarted; returns whether the partition state changed."""
        if broker not in self.live:
            return False
        self.live.discard(broker)
        state = self.state
        isr = tuple(r for r in state.isr if r != broker) or state.isr
        if state.leader == broker:
            self._elect(isr)
        elif isr != state.isr:
            self._change(isr=isr)
        return True

    def unfence(self, broker: int) -> bool:
        if broker in self.live:
            return False
        self.live.add(broker)
        if self.state.leader == NO_LEADER:
            self._elect(self.state.isr)
            return self.state.leader != NO_LEADER
        return False

    def _elect(self, isr: tuple[int, ...]) -> None:
        state = self.state
        candidates = [r for r in state.replicas if r in isr and r in self.live]
        if candidates:
            self._change(leader=candidates[0], leader_epoch=state.leader_epoch + 1, isr=isr)
            return
        if self.unclean_election:
            live = [r for r in state.replicas if r in self.live]
            if live:
                self.unclean_elections += 1
                self._change(leader=live[0], leader_epoch=state.leader_epoch + 1, isr=(live[0],))
                return
        if state.leader != NO_LEADER or isr != state.isr:
            self._change(leader=NO_LEADER, leader_epoch=state.leader_epoch + 1, isr=isr)

    def alter_partition(self, broker: int, leader_epoch: int, partition_epoch: int,
                        isr: tuple[int, ...]) -> ErrorCode:
        state = self.state
        if broker != state.leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if leader_epoch != state.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if partition_epoch != state.partition_epoch:
            return ErrorCode.INVALID_UPDATE_VERSION
        if broker not in isr or any(r not in self.live or r not in state.replicas for r in isr):
            return ErrorCode.INELIGIBLE_REPLICA
        self._change(isr=tuple(r for r in state.replicas if r in isr))
        return ErrorCode.NONE
