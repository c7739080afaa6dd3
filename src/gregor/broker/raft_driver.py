"""The asyncio edge of the raft client: the wall clock, sockets and the wire versions.

`gregor.raft.RaftClient` decides everything and returns effects; this driver only carries them
out. After every event it arms one timer for the client's next deadline and polls the client
when it comes (the drive contract, `deadline_timer`); it sends `Send` effects to peers through
the PeerChannel, completes the awaiting request handler for a `Respond` effect, and hands
`HighWatermarkChanged` and `StateChanged` to the layer above.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from typing import Any, Callable

from gregor.broker.clock import Clock, wall_clock_ms
from gregor.broker.deadline_timer import DeadlineTimer
from gregor.broker.peer_channel import PLAINTEXT, PeerChannel
from gregor.broker.security.listener_security import OutboundSecurity
from gregor.protocol.messages import Message
from gregor.protocol.messages.begin_quorum_epoch import BeginQuorumEpochRequest
from gregor.protocol.messages.end_quorum_epoch import EndQuorumEpochRequest
from gregor.protocol.messages.fetch import FetchRequest
from gregor.protocol.messages.fetch_snapshot import FetchSnapshotRequest
from gregor.protocol.messages.vote import VoteRequest
from gregor.raft.client import RaftClient
from gregor.raft.effects import Effect, HighWatermarkChanged, Respond, Send, SnapshotInstalled, StateChanged

log = logging.getLogger("gregor.raft")

RESIGN_GRACE_S = 0.01  # for the EndQuorumEpoch requests to leave before the connections close
KRAFT_FETCH_VERSION = 13  # the first Fetch with topic ids, which KRaft requires

# The versions this node sends; its own handlers accept these, so every Gregor node understands them.
REQUEST_VERSIONS: dict[type, int] = {
    VoteRequest: 0,
    BeginQuorumEpochRequest: 0,
    EndQuorumEpochRequest: 0,
    FetchRequest: KRAFT_FETCH_VERSION,
    FetchSnapshotRequest: 0,
}


class RaftDriver:
    """Runs one RaftClient; `on_committed(high_watermark)` and `on_state(state)` go up a layer."""

    def __init__(self, raft: RaftClient, peers: dict[int, tuple[str, int]],
                 on_committed: Callable[[int], None], on_state: Callable[[Any], None] = lambda state: None,
                 clock: Clock = wall_clock_ms, security: OutboundSecurity = PLAINTEXT) -> None:
        """`security`: how connections to the other voters' controller listener are secured."""
        self.raft = raft
        self._clock = clock
        self._on_committed = on_committed
        self._on_state = on_state
        self._channel = PeerChannel({node: address for node, address in peers.items() if node != raft.node_id},
                                    f"raft-{raft.node_id}", self._on_response, security)
        self._waiting: dict[int, asyncio.Future[Message]] = {}
        self._inbound_ids = itertools.count(1 << 30)
        self._timer = DeadlineTimer(clock, self._poll)
        self._closed = False

    def start(self) -> None:
        """Restore the election state; from now on the client is polled at its deadlines."""
        state = self.raft.start(self._clock())
        log.info("metadata quorum: node %d starts as %s in epoch %d", self.raft.node_id, state.role.name.lower(),
                 state.epoch)
        self._poll(self._clock())

    def _poll(self, now_ms: int) -> None:
        self._apply(self.raft.poll(now_ms))

    def handle_request(self, source: int, request: Message) -> asyncio.Future[Message]:
        """A raft request from node `source`; the future completes with its response (Fetch may
        wait up to its max wait for new records)."""
        correlation_id = next(self._inbound_ids)
        future: asyncio.Future[Message] = asyncio.get_running_loop().create_future()
        self._waiting[correlation_id] = future
        self._apply(self.raft.handle_request(source, correlation_id, request, self._clock()))
        return future

    def append(self, values: list[bytes]) -> int:
        """Append as leader now (KafkaError NOT_CONTROLLER otherwise); returns the last offset."""
        last_offset = self.raft.append(values, self._clock())
        self._apply(self.raft.poll(self._clock()))
        return last_offset

    def _on_response(self, source: int, correlation_id: int, response: Any) -> None:
        self._apply(self.raft.handle_response(source, correlation_id, response, self._clock()))

    def _apply(self, effects: list[Effect]) -> None:
        """Carry out the effects of one event, then arm the timer for the client's next deadline."""
        for effect in effects:
            if isinstance(effect, Send):
                self._channel.send(effect.destination, effect.correlation_id, effect.request,
                                   REQUEST_VERSIONS[type(effect.request)])
            elif isinstance(effect, Respond):
                future = self._waiting.pop(effect.correlation_id, None)
                if future is not None and not future.done():
                    future.set_result(effect.response)
            elif isinstance(effect, HighWatermarkChanged):
                self._on_committed(effect.high_watermark)
            elif isinstance(effect, StateChanged):
                state = effect.state
                log.info("metadata quorum: node %d is %s in epoch %d (leader %d)", self.raft.node_id,
                         state.role.name.lower(), state.epoch, self.raft.leader_id)
                self._on_state(state)
            elif isinstance(effect, SnapshotInstalled):
                log.info("metadata quorum: node %d installed snapshot %s", self.raft.node_id, effect.snapshot_id)
                self._on_committed(self.raft.high_watermark)
        if not self._closed:
            self._timer.arm(self.raft.next_deadline())

    async def close(self) -> None:
        """Resign leadership (so the others elect at once), stop polling and close the log."""
        if self.raft.is_leader:
            self._apply(self.raft.resign(self._clock()))
            await asyncio.sleep(RESIGN_GRACE_S)
        self._closed = True
        self._timer.cancel()
        self._channel.close()
        for future in self._waiting.values():
            future.cancel()
        self.raft.close()
