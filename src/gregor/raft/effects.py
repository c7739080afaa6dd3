"""What the raft client asks its edge to do, and what it tells the layer above.

The client never sends or sleeps: every entry point returns these, in order. The edge puts
`Send` and `Respond` on the wire (matching a response to its request by correlation id) and
passes `HighWatermarkChanged`, `StateChanged` and `SnapshotInstalled` up to the metadata layer.
"""

from __future__ import annotations

from typing import NamedTuple, Union

from gregor.protocol.messages import Message
from gregor.raft.quorum_state import EpochState
from gregor.raft.replicated_log import SnapshotId


class Send(NamedTuple):
    """A request to node `destination`; its response comes back with `correlation_id`."""

    destination: int
    correlation_id: int
    request: Message


class Respond(NamedTuple):
    """The response to the request `correlation_id` that node `destination` sent."""

    destination: int
    correlation_id: int
    response: Message


class HighWatermarkChanged(NamedTuple):
    """Entries below `high_watermark` are committed (at most one per batch of effects, last)."""

    high_watermark: int


class StateChanged(NamedTuple):
    state: EpochState


class SnapshotInstalled(NamedTuple):
    """The log now starts at this snapshot: the state machine must reload from it."""

    snapshot_id: SnapshotId


Effect = Union[Send, Respond, HighWatermarkChanged, StateChanged, SnapshotInstalled]
