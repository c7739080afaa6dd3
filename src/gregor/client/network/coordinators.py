"""Which broker coordinates a consumer group or a transactional id (FindCoordinator, cached).

Group requests (JoinGroup, OffsetCommit, DescribeGroups, ...) and transactional requests must
go to the key's coordinator. `Coordinators.find_many` asks for many keys in one FindCoordinator
v4+ request when the broker speaks it (KIP-699) and falls back to one v0–v3 request per key.
Answers are cached until `invalidate` (call it on NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE,
which mean the coordinator moved). The coordinator's address is added to the cluster metadata
so that `NetworkClient.send(request, node_id)` reaches it.
"""

from __future__ import annotations

import asyncio
import enum
from typing import Iterable

from gregor.client.errors import KafkaException, error_for
from gregor.client.network.client import NetworkClient
from gregor.client.network.cluster import Node
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ApiKey, FindCoordinatorRequest

BATCHED_VERSION = 4

COORDINATOR_MOVED_ERRORS = frozenset({
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
})


class CoordinatorType(enum.IntEnum):
    GROUP = 0
    TRANSACTION = 1
    SHARE = 2


class Coordinators:
    """FindCoordinator answers by (key type, key): node ids of coordinators."""

    def __init__(self, network: NetworkClient) -> None:
        self._network = network
        self._known: dict[tuple[int, str], int] = {}

    def invalidate(self, key: str, key_type: CoordinatorType = CoordinatorType.GROUP) -> None:
        self._known.pop((key_type, key), None)

    async def find(self, key: str, key_type: CoordinatorType = CoordinatorType.GROUP, *,
                   timeout_ms: float | None = None) -> int:
        """The coordinator's node id; raises KafkaException with the broker's error."""
        found = (await self.find_many([key], key_type, timeout_ms=timeout_ms))[key]
        if isinstance(found, KafkaException):
            raise found
        return found

    async def find_many(self, keys: Iterable[str], key_type: CoordinatorType = CoordinatorType.GROUP, *,
                        timeout_ms: float | None = None) -> dict[str, int | KafkaException]:
        """Node id of each key's coordinator, or the error the broker gave for that key.

        A failure of the request itself (no broker, timeout) raises.
        """
        found: dict[str, int | KafkaException] = {}
        missing = []
        for key in dict.fromkeys(keys):
            node_id = self._known.get((key_type, key))
            if node_id is not None and self._network.cluster.node(node_id) is not None:
                found[key] = node_id
            else:
                missing.append(key)
        if not missing:
            return found
        loop = asyncio.get_running_loop()
        timeout_ms = self._network.settings.request_timeout_ms if timeout_ms is None else timeout_ms
        deadline = loop.time() + timeout_ms / 1000
        connection = await self._network.any_connection(deadline=deadline)
        version = connection.pick_version(ApiKey.FIND_COORDINATOR, (0 if key_type == CoordinatorType.GROUP else 1, 6))
        remaining_ms = max(0.0, (deadline - loop.time()) * 1000)
        if version >= BATCHED_VERSION:
            response = await connection.send(
                FindCoordinatorRequest(key_type=key_type, coordinator_keys=missing),
                version=version, timeout_ms=remaining_ms)
            answers = [(entry.key, entry.error_code, entry.error_message, entry.node_id, entry.host, entry.port)
                       for entry in response.coordinators]
        else:
            responses = await asyncio.gather(*(
                connection.send(FindCoordinatorRequest(key=key, key_type=key_type), version=version,
                                timeout_ms=remaining_ms)
                for key in missing))
            answers = [(key, response.error_code, response.error_message, response.node_id, response.host,
                        response.port) for key, response in zip(missing, responses)]
        for key, error_code, error_message, node_id, host, port in answers:
            if error_code != ErrorCode.NONE:
                found[key] = error_for(error_code, error_message)
                continue
            self._network.cluster.add_node(Node(node_id, host, port))
            self._known[(key_type, key)] = node_id
            found[key] = node_id
        for key in missing:
            found.setdefault(key, KafkaException(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the broker did not answer for this key"))
        return found
