"""A broker's membership in the cluster, as the active controller sees it (Kafka's
BrokerLifecycleManager): register, heartbeat, and leave with a controlled shutdown.

The broker registers (it starts fenced), then heartbeats with the metadata offset it has
replayed, every 50 ms while fenced and every `broker.heartbeat.interval.ms` once running; the
controller unfences it once that offset reaches its registration, and `unfenced` completes. A STALE_BROKER_EPOCH or BROKER_ID_NOT_REGISTERED answer
(the registration was lost) registers again. At shutdown, heartbeats ask to shut down until the
controller has moved the broker's leaderships away and says it may stop, or the time is up.
A registration refused because the node id's previous process still has a live session
(DUPLICATE_BROKER_REGISTRATION, after a quick restart of a broker whose controller stayed up) is
retried until that session expires, as Kafka does; only INCONSISTENT_CLUSTER_ID (the broker's
data belongs to another cluster) ends the lifecycle, raised to whoever awaits `registered`.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import uuid
from typing import Callable

from gregor.broker.controller_channel import ControllerChannel
from gregor.metadata.features import SUPPORTED_FEATURES
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse
from gregor.protocol.messages.broker_registration import BrokerRegistrationRequest

log = logging.getLogger("gregor.broker")

REGISTRATION_VERSION = 2
HEARTBEAT_VERSION = 0
FATAL = frozenset({ErrorCode.INCONSISTENT_CLUSTER_ID, ErrorCode.UNSUPPORTED_VERSION})  # a feature level it cannot honour
REREGISTER = frozenset({ErrorCode.STALE_BROKER_EPOCH, ErrorCode.BROKER_ID_NOT_REGISTERED})
FENCED_HEARTBEAT_S = 0.05
UNANSWERED_SHUTDOWN_HEARTBEATS = 2  # no controller answers (all stopped): stop without its consent


class LifecycleState(enum.Enum):
    STARTING = "starting"
    FENCED = "fenced"
    RUNNING = "running"
    SHUTTING_DOWN = "shutting down"
    STOPPED = "stopped"


class BrokerLifecycle:
    def __init__(self, channel: ControllerChannel, broker_id: int, cluster_id: str,
                 listeners: list[BrokerRegistrationRequest.Listener], rack: str | None,
                 metadata_offset: Callable[[], int], heartbeat_interval_ms: int = 2000,
                 incarnation_id: uuid.UUID | None = None) -> None:
        self.channel = channel
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.listeners = listeners
        self.rack = rack
        self.metadata_offset = metadata_offset
        self.heartbeat_interval_s = heartbeat_interval_ms / 1000
        self.incarnation_id = incarnation_id or uuid.uuid4()
        self.state = LifecycleState.STARTING
        self.broker_epoch = -1
        self._registered: asyncio.Future[int] | None = None
        self._unfenced: asyncio.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._registered = loop.create_future()
        self._unfenced = loop.create_future()
        self._task = asyncio.ensure_future(self._run())

    def _milestones(self) -> tuple[asyncio.Future[int], asyncio.Future[None]]:
        """The first registration and the first unfencing, which `start` begins waiting for."""
        if self._registered is None or self._unfenced is None:
            raise RuntimeError(f"the lifecycle of broker {self.broker_id} has not started")
        return self._registered, self._unfenced

    async def registered(self) -> int:
        """The broker epoch of the first registration (raises the fatal error, if any)."""
        registered, _ = self._milestones()
        return await asyncio.shield(registered)

    async def unfenced(self) -> None:
        """Completes when the controller first unfences the broker (raises as `registered` does)."""
        await self.registered()
        _, unfenced = self._milestones()
        await asyncio.shield(unfenced)

    async def _run(self) -> None:
        try:
            await self._register()
            while self.state in (LifecycleState.FENCED, LifecycleState.RUNNING):
                await self._heartbeat(want_shut_down=False)
                # while fenced the broker is catching up: it reports its progress at once, so it
                # is unfenced as soon as it has replayed its registration, as Kafka's does
                fenced = self.state == LifecycleState.FENCED
                await asyncio.sleep(min(FENCED_HEARTBEAT_S, self.heartbeat_interval_s) if fenced
                                    else self.heartbeat_interval_s)
        except KafkaError as error:
            log.error("broker %d cannot stay in the cluster: %s", self.broker_id, error)
            self.state = LifecycleState.STOPPED
            registered, unfenced = self._milestones()
            if not registered.done():
                registered.set_exception(error)
                unfenced.cancel()  # `unfenced` raises the registration's error instead
            elif not unfenced.done():
                unfenced.set_exception(error)

    async def _register(self) -> None:
        request = BrokerRegistrationRequest(
            broker_id=self.broker_id, cluster_id=self.cluster_id, incarnation_id=self.incarnation_id,
            listeners=self.listeners, rack=self.rack or None,
            features=[BrokerRegistrationRequest.Feature(name=f.name, min_supported_version=f.min_level,
                                                        max_supported_version=f.max_level)
                      for f in SUPPORTED_FEATURES])
        while True:
            try:
                response = await self.channel.send(request, REGISTRATION_VERSION, self.heartbeat_interval_s * 5)
            except KafkaError as error:
                log.info("broker %d: registration not answered yet (%s); retrying", self.broker_id, error)
                continue
            code = ErrorCode(response.error_code)
            if code in FATAL:
                raise KafkaError(code, f"the controller refused to register broker {self.broker_id}")
            if code == ErrorCode.NONE:
                break
            log.info("broker %d: registration refused with %s; retrying", self.broker_id, code.name)
            await asyncio.sleep(self.heartbeat_interval_s)
        self.broker_epoch = response.broker_epoch
        self.state = LifecycleState.FENCED
        log.info("broker %d registered with broker epoch %d (fenced until caught up)", self.broker_id,
                 self.broker_epoch)
        registered, _ = self._milestones()
        if not registered.done():
            registered.set_result(self.broker_epoch)

    async def _heartbeat(self, want_shut_down: bool) -> BrokerHeartbeatResponse | None:
        request = BrokerHeartbeatRequest(broker_id=self.broker_id, broker_epoch=self.broker_epoch,
                                         current_metadata_offset=self.metadata_offset(),
                                         want_shut_down=want_shut_down)
        try:
            response = await self.channel.send(request, HEARTBEAT_VERSION, self.heartbeat_interval_s * 2)
        except KafkaError as error:
            log.info("broker %d: heartbeat not answered (%s)", self.broker_id, error)
            return None
        code = ErrorCode(response.error_code)
        if code in REREGISTER:
            log.info("broker %d: the controller answered %s; registering again", self.broker_id, code.name)
            await self._register()
            return None
        if code != ErrorCode.NONE:
            log.info("broker %d: heartbeat refused with %s", self.broker_id, code.name)
            return None
        if self.state == LifecycleState.FENCED and not response.is_fenced:
            self.state = LifecycleState.RUNNING
            log.info("broker %d is unfenced: it may lead partitions", self.broker_id)
            _, unfenced = self._milestones()
            if not unfenced.done():
                unfenced.set_result(None)
        elif self.state == LifecycleState.RUNNING and response.is_fenced:
            self.state = LifecycleState.FENCED
            log.info("broker %d was fenced by the controller", self.broker_id)
        return response

    async def controlled_shutdown(self, timeout_s: float) -> bool:
        """Ask to shut down until the controller agrees; returns whether it did within `timeout_s`.
        Two heartbeats in a row that no controller accepts (the quorum is gone) end the wait early."""
        if self._task is not None:
            self._task.cancel()
        if self.state not in (LifecycleState.FENCED, LifecycleState.RUNNING):
            self.state = LifecycleState.STOPPED
            return False
        self.state = LifecycleState.SHUTTING_DOWN
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        agreed = False
        unanswered = 0
        while loop.time() < deadline and unanswered < UNANSWERED_SHUTDOWN_HEARTBEATS:
            response = await self._heartbeat(want_shut_down=True)
            if response is not None and response.should_shut_down:
                agreed = True
                break
            unanswered = unanswered + 1 if response is None else 0
            await asyncio.sleep(min(0.2, self.heartbeat_interval_s))
        self.state = LifecycleState.STOPPED
        log.info("broker %d: controlled shutdown %s", self.broker_id,
                 "completed" if agreed else f"not confirmed within {timeout_s:.0f} s")
        return agreed

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, KafkaError):
                pass
        await self.channel.close()
