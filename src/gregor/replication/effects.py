"""What a partition replica asks its host to do; the host performs the I/O and reports back.

Requests carry a `request_id`; the host hands it back with the answer so that late, duplicated
or superseded answers are recognised and ignored.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import FetchRequest, OffsetForLeaderEpochRequest


@dataclass(frozen=True)
class SendFetch:
    """A follower's fetch to the leader (the host wraps it in a FetchRequest with its replica id)."""

    leader_id: int
    request_id: int
    partition: FetchRequest.FetchPartition


@dataclass(frozen=True)
class SendOffsetsForLeaderEpoch:
    """A follower asks where an epoch ends in the leader's log."""

    leader_id: int
    request_id: int
    partition: OffsetForLeaderEpochRequest.OffsetForLeaderPartition


@dataclass(frozen=True)
class ProposeIsr:
    """AlterPartition to the controller: the leader wants `isr`; nothing changes until it is confirmed."""

    request_id: int
    leader_epoch: int
    partition_epoch: int
    isr: tuple[int, ...]


@dataclass(frozen=True)
class ProduceCompleted:
    """An acks=all produce is answered: NONE once the high watermark passed it, else the error."""

    token: object
    error: ErrorCode


Effect = Union[SendFetch, SendOffsetsForLeaderEpoch, ProposeIsr, ProduceCompleted]
