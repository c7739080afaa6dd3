"""Answers of the consumer-group APIs as plain values the broker maps onto responses."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Mapping

from gregor.coordinator.consumer.assignment import Assignment
from gregor.protocol.error_codes import ErrorCode


@dataclass(frozen=True)
class HeartbeatResult:
    """`assignment` is None when the member's assignment did not change (the wire's null)."""

    error: ErrorCode
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


@dataclass(frozen=True)
class DescribedMember:
    member_id: str
    instance_id: str | None
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    assignment: Assignment
    target_assignment: Assignment


@dataclass(frozen=True)
class ConsumerGroupDescription:
    group_id: str
    error: ErrorCode
    error_message: str | None = None
    state: str = ""
    group_epoch: int = 0
    assignment_epoch: int = 0
    assignor_name: str = ""
    members: tuple[DescribedMember, ...] = ()
    topic_names: Mapping[uuid.UUID, str] = field(default_factory=dict)
