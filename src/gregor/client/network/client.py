"""The network client: connections to the brokers of one cluster, metadata, routing.

A `NetworkClient` owns at most one `BrokerConnection` per node, opened on first use, reopened
after a failure once the reconnect backoff (`reconnect.backoff.ms` doubling to
`reconnect.backoff.max.ms`) has passed; the connection setup timeout grows the same way from
`socket.connection.setup.timeout.ms` to `.max.ms`. It sends a request to a given node id, or to
the least loaded node (fewest requests in flight among the connected ones, else one that can be
connected now), and keeps `cluster` (a `ClusterMetadata`) fresh with a background task that
refreshes when asked (`request_metadata_update`, or any error in `STALE_METADATA_ERRORS`
passed to `note_error`) and at least every `metadata.max.age.ms`.

A request that was written and then lost with its connection is not resent here: whether that
is safe depends on the API, so the failure (`_TRANSPORT`) goes to the caller. Only failures to
connect move a request for "any node" on to the next node.

All methods run on the event loop of the client's network thread (see `runner`); none is
thread-safe.
"""

from __future__ import annotations

import asyncio
import math
import random
from dataclasses import dataclass
from typing import Any, Collection

from gregor.client.errors import ClientErrorCode, KafkaConnectionError, KafkaException, KafkaTimeoutError
from gregor.client.network import controllers
from gregor.client.network.cluster import STALE_METADATA_ERRORS, ClusterMetadata
from gregor.client.network.connection import BrokerConnection
from gregor.client.network.settings import NetworkSettings
from gregor.protocol.backoff import ExponentialBackoff
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import MetadataRequest

#: A refused login is the caller's to fix, not a broker to try again: Kafka's clients raise it at
#: once (an AuthenticationException), instead of trying other brokers until the deadline.
AUTHENTICATION_ERRORS = frozenset({ErrorCode.SASL_AUTHENTICATION_FAILED, ErrorCode.UNSUPPORTED_SASL_MECHANISM,
                                   ErrorCode.ILLEGAL_SASL_STATE})


@dataclass
class _NodeState:
    """Connection bookkeeping for one node id."""

    address: tuple[str, int]
    connection: BrokerConnection | None = None
    connecting: asyncio.Task | None = None
    failures: int = 0
    retry_at: float = 0.0
    last_error: KafkaException | None = None

    def ready(self) -> bool:
        return self.connection is not None and not self.connection.closed


class NetworkClient:
    """Connections, metadata and request routing for one client instance."""

    def __init__(self, settings: NetworkSettings, *, rng: random.Random | None = None) -> None:
        self.settings = settings
        self.cluster = ClusterMetadata(settings.bootstrap_servers, settings.metadata_max_age_ms)
        rng = rng or random.Random()
        self._reconnect_backoff = ExponentialBackoff(settings.reconnect_backoff_ms,
                                                     settings.reconnect_backoff_max_ms, rng=rng)
        self._setup_timeout = ExponentialBackoff(settings.socket_connection_setup_timeout_ms,
                                                 settings.socket_connection_setup_timeout_max_ms, rng=rng)
        self.retry_backoff = ExponentialBackoff(settings.retry_backoff_ms, settings.retry_backoff_max_ms, rng=rng)
        self._rng = rng
        self._nodes: dict[int, _NodeState] = {}
        self._refresher: asyncio.Task | None = None
        self._refresh_wakeup: asyncio.Future | None = None
        self._update_waiters: list[asyncio.Future] = []
        self._closed = False

    def start(self) -> None:
        """Start the metadata refresher; call once, on the loop."""
        self._refresher = asyncio.get_running_loop().create_task(
            self._keep_metadata_fresh(), name="gregor-metadata-refresher")

    async def close(self) -> None:
        """Stop the refresher and close every connection (in-flight requests fail with `_DESTROY`)."""
        self._closed = True
        if self._refresher is not None:
            self._refresher.cancel()
            await asyncio.gather(self._refresher, return_exceptions=True)
        closing = KafkaException(ClientErrorCode._DESTROY, "the client is closing")
        connecting = [state.connecting for state in self._nodes.values() if state.connecting is not None]
        for task in connecting:
            task.cancel()
        await asyncio.gather(*connecting, return_exceptions=True)
        for state in self._nodes.values():
            if state.connection is not None:
                state.connection.close(closing)
        for waiter in self._update_waiters:
            waiter.cancel()
        self._update_waiters.clear()

    # sending

    async def send(self, request: Any, node_id: int | None = None, *, versions: tuple[int, int] | None = None,
                   timeout_ms: float | None = None, expect_response: bool = True) -> Any:
        """Send to `node_id`, or to the least loaded node, and return the response.

        `timeout_ms` (default `request.timeout.ms`) bounds connecting and the request together.
        """
        deadline = self._deadline(timeout_ms)
        if node_id is None:
            connection = await self.any_connection(deadline=deadline)
        else:
            connection = await self.connection(node_id, deadline=deadline)
        remaining_ms = self._remaining_ms(deadline)
        if remaining_ms <= 0:
            raise KafkaTimeoutError(ClientErrorCode._TIMED_OUT,
                                    f"no time left to send {type(request).__name__} to node {connection.node_id}")
        return await connection.send(request, versions=versions, expect_response=expect_response,
                                     timeout_ms=remaining_ms)

    async def connection(self, node_id: int, *, deadline: float | None = None) -> BrokerConnection:
        """The open connection to `node_id`, connecting if needed after waiting out its reconnect
        backoff; one attempt: a failure to connect raises (`_TRANSPORT` or `_TIMED_OUT`)."""
        deadline = self._deadline(None) if deadline is None else deadline
        if self._closed:
            raise KafkaException(ClientErrorCode._DESTROY, "the client is closed")
        if self.cluster.node(node_id) is None:
            await self._learn_node(node_id, deadline)
        state = self._state(node_id)
        loop = asyncio.get_running_loop()
        if state.ready():
            return state.connection
        if state.connecting is None:
            wait = state.retry_at - loop.time()
            if wait > 0:
                if loop.time() + wait >= deadline:
                    raise self._unreachable(node_id, state)
                await asyncio.sleep(wait)
                return await self.connection(node_id, deadline=deadline)
            state.connecting = loop.create_task(self._connect(node_id, state))
            state.connecting.add_done_callback(_consume_outcome)
        try:
            async with asyncio.timeout_at(deadline):
                return await asyncio.shield(state.connecting)
        except TimeoutError:
            raise self._unreachable(node_id, state) from None

    async def _learn_node(self, node_id: int, deadline: float) -> None:
        """A node id that the metadata does not list yet (a broker named by the caller before any
        metadata came, or one that joined since): refresh the metadata first, as Kafka's clients
        do, and refuse the id with BROKER_NOT_AVAILABLE only if it is still unknown then."""
        remaining_ms = self._remaining_ms(deadline)
        if remaining_ms <= 0:
            raise KafkaTimeoutError(ClientErrorCode._TIMED_OUT, f"no time left to look up node {node_id}")
        await self.refresh_metadata(self.cluster.topics_to_refresh(), timeout_ms=remaining_ms)
        if self.cluster.node(node_id) is None:
            known = ", ".join(str(node) for node in sorted(self.cluster.brokers)) or "none"
            raise KafkaConnectionError(ErrorCode.BROKER_NOT_AVAILABLE,
                                       f"node {node_id} is not in the cluster (its brokers: {known})")

    async def any_connection(self, *, deadline: float | None = None) -> BrokerConnection:
        """A connection to the least loaded node, moving on to other nodes while connecting fails;
        `_ALL_BROKERS_DOWN` when none could be reached by the deadline."""
        deadline = self._deadline(None) if deadline is None else deadline
        loop = asyncio.get_running_loop()
        last_error: KafkaException | None = None
        while True:
            node_id = self.least_loaded_node()
            if node_id is None:
                raise KafkaConnectionError(ClientErrorCode._ALL_BROKERS_DOWN, "no broker is known")
            try:
                return await self.connection(node_id, deadline=deadline)
            except KafkaException as error:
                if error.code == ClientErrorCode._DESTROY or error.code in AUTHENTICATION_ERRORS:
                    raise
                last_error = error
            if loop.time() >= deadline or self._all_backing_off_past(deadline):
                raise self._all_down(last_error)

    def least_loaded_node(self) -> int | None:
        """A connected node with the fewest requests in flight, else one that may connect now,
        else the one whose reconnect backoff ends first (Kafka's leastLoadedNode)."""
        node_ids = list(self.cluster.brokers)
        if not node_ids:
            return None
        start = self._rng.randrange(len(node_ids))
        node_ids = node_ids[start:] + node_ids[:start]
        now = asyncio.get_running_loop().time()
        best, best_load = None, None
        connectable = None
        for node_id in node_ids:
            state = self._nodes.get(node_id)
            if state is not None and state.ready():
                load = state.connection.in_flight
                if best_load is None or load < best_load:
                    best, best_load = node_id, load
            elif connectable is None and (state is None or state.connecting is not None or state.retry_at <= now):
                connectable = node_id
        if best is not None and (best_load == 0 or connectable is None):
            return best
        if connectable is not None:
            return connectable
        return min(node_ids, key=lambda node_id: self._nodes[node_id].retry_at)

    # metadata

    def note_error(self, error_code: int) -> None:
        """Let an error code from a response mark the metadata stale when it means that."""
        if error_code in STALE_METADATA_ERRORS:
            self.request_metadata_update()

    def request_metadata_update(self) -> asyncio.Future:
        """Ask the refresher for a refresh; the future resolves with `cluster` after the next one."""
        self.cluster.request_update()
        waiter = asyncio.get_running_loop().create_future()
        self._update_waiters.append(waiter)
        self._wake_refresher()
        return waiter

    async def refresh_metadata(self, topics: Collection[str] | None = (), *,
                               allow_auto_topic_creation: bool = False,
                               timeout_ms: float | None = None) -> ClusterMetadata:
        """Fetch metadata now for `topics` (None: every topic; empty: brokers only) from any node
        (from `bootstrap.controllers`: the controllers, with DescribeCluster, `controllers`)."""
        names = None if topics is None else sorted(set(topics))
        loop = asyncio.get_running_loop()
        try:
            if self.settings.to_controllers:
                names = []
                response = controllers.as_metadata(await self.send(
                    controllers.metadata_request(), versions=controllers.VERSIONS, timeout_ms=timeout_ms))
            else:
                response = await self.send(MetadataRequest(
                    topics=None if names is None else [MetadataRequest.MetadataRequestTopic(name=n) for n in names],
                    allow_auto_topic_creation=allow_auto_topic_creation), timeout_ms=timeout_ms)
        except KafkaException:
            self.cluster.record_failure(loop.time() * 1000)
            raise
        self.cluster.update(response, loop.time() * 1000, names)
        self._forget_moved_nodes()
        waiters, self._update_waiters = self._update_waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(self.cluster)
        return self.cluster

    async def _keep_metadata_fresh(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            backoff_ms = self.retry_backoff.delay_ms(self.cluster.failed_attempts)
            delay_ms = self.cluster.ms_until_refresh(loop.time() * 1000, backoff_ms)
            if delay_ms > 0:
                self._refresh_wakeup = loop.create_future()
                timer = None if delay_ms == math.inf else loop.call_later(delay_ms / 1000, self._wake_refresher)
                try:
                    await self._refresh_wakeup
                finally:
                    if timer is not None:
                        timer.cancel()
                continue
            try:
                await self.refresh_metadata(self.cluster.topics_to_refresh())
            except KafkaException:
                continue

    def _wake_refresher(self) -> None:
        if self._refresh_wakeup is not None and not self._refresh_wakeup.done():
            self._refresh_wakeup.set_result(None)

    # internals

    def _state(self, node_id: int) -> _NodeState:
        node = self.cluster.node(node_id)
        if node is None:
            raise KafkaConnectionError(ClientErrorCode._TRANSPORT, f"node {node_id} is not in the cluster metadata")
        state = self._nodes.get(node_id)
        if state is None or state.address != (node.host, node.port):
            moved, state = state, _NodeState(address=(node.host, node.port))
            self._nodes[node_id] = state
            if moved is not None and moved.connection is not None:
                moved.connection.close()
        return state

    async def _connect(self, node_id: int, state: _NodeState) -> BrokerConnection:
        loop = asyncio.get_running_loop()
        host, port = state.address
        try:
            connection = await BrokerConnection.open(
                node_id, host, port, client_id=self.settings.client_id,
                request_timeout_ms=self.settings.request_timeout_ms,
                setup_timeout_ms=self._setup_timeout.delay_ms(state.failures + 1),
                on_close=self._on_connection_closed, security=self.settings.security)
        except KafkaException as error:
            state.failures += 1
            state.retry_at = loop.time() + self._reconnect_backoff.delay_ms(state.failures) / 1000
            state.last_error = error
            raise
        finally:
            state.connecting = None
        state.connection = connection
        state.failures = 0
        state.last_error = None
        return connection

    def _on_connection_closed(self, connection: BrokerConnection, reason: KafkaException) -> None:
        state = self._nodes.get(connection.node_id)
        if state is None or state.connection is not connection or self._closed:
            return
        state.connection = None
        state.last_error = reason
        state.retry_at = asyncio.get_running_loop().time() + self._reconnect_backoff.delay_ms(1) / 1000
        if self.cluster.bootstrapped:
            self.cluster.request_update()
            self._wake_refresher()

    def _forget_moved_nodes(self) -> None:
        """Drop connections to node ids the metadata no longer lists at that address (the
        bootstrap servers' pseudo node ids, moved brokers) once nothing is in flight on them."""
        for node_id, state in list(self._nodes.items()):
            node = self.cluster.node(node_id)
            if node is not None and (node.host, node.port) == state.address:
                continue
            if state.connecting is None and (state.connection is None or state.connection.in_flight == 0):
                del self._nodes[node_id]
                if state.connection is not None:
                    state.connection.close()

    def _deadline(self, timeout_ms: float | None) -> float:
        timeout_ms = self.settings.request_timeout_ms if timeout_ms is None else timeout_ms
        return asyncio.get_running_loop().time() + timeout_ms / 1000

    @staticmethod
    def _remaining_ms(deadline: float) -> float:
        return max(0.0, (deadline - asyncio.get_running_loop().time()) * 1000)

    def _all_backing_off_past(self, deadline: float) -> bool:
        """True when no node can be tried again before the deadline."""
        retry_times = [self._nodes[node_id].retry_at if node_id in self._nodes else 0.0
                       for node_id in self.cluster.brokers]
        return min(retry_times, default=0.0) >= deadline

    @staticmethod
    def _unreachable(node_id: int, state: _NodeState) -> KafkaException:
        """Why `node_id` cannot be used now: its last connection failure, else a timeout."""
        if state.last_error is not None:
            return type(state.last_error)(state.last_error.error)
        return KafkaTimeoutError(ClientErrorCode._TIMED_OUT, f"timed out connecting to node {node_id}")

    @staticmethod
    def _all_down(last_error: KafkaException | None) -> KafkaException:
        detail = f"; last error: {last_error}" if last_error is not None else ""
        return KafkaConnectionError(ClientErrorCode._ALL_BROKERS_DOWN, f"no broker could be reached{detail}")


def _consume_outcome(task: asyncio.Task) -> None:
    """Mark a connection attempt's failure as seen: it is kept in its node's `last_error`, and
    the callers that waited for it may have given up (their deadline passed) before it ended."""
    if not task.cancelled():
        task.exception()
