"""Which brokers are up and which are down, as a client can tell.

DescribeCluster and Metadata list only live (registered, unfenced) brokers: a broker that died
simply drops out of the answer. The registry remembers every broker it has seen (and every broker
id that a partition names as a replica), so the page can show one that went as down, with its
last known address and rack, instead of silently listing one broker fewer.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Iterable

from gregor.client.network import Node


@dataclass(frozen=True)
class BrokerStatus:
    node_id: int
    host: str | None
    port: int | None
    rack: str | None
    up: bool
    last_seen_ms: int | None
    """When the cluster last listed it as live (None: never, only named as a replica)."""

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}" if self.host is not None else "unknown"


class BrokerRegistry:
    """Thread-safe memory of the brokers seen live; both page loads and the sampler feed it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[int, Node | None] = {}
        self._last_seen: dict[int, int] = {}
        self._live: set[int] = set()

    def observe(self, live: Iterable[Node], referenced: Iterable[int], now_ms: int) -> list[BrokerStatus]:
        """Record the live brokers of one answer (and the broker ids partitions name) and return
        every broker known, live or not, by id."""
        with self._lock:
            self._live = set()
            for node in live:
                self._known[node.node_id] = node
                self._last_seen[node.node_id] = now_ms
                self._live.add(node.node_id)
            for node_id in referenced:
                if node_id >= 0:
                    self._known.setdefault(node_id, None)
            return self._statuses()

    def statuses(self) -> list[BrokerStatus]:
        with self._lock:
            return self._statuses()

    def _statuses(self) -> list[BrokerStatus]:
        result = []
        for node_id in sorted(self._known):
            node = self._known[node_id]
            result.append(BrokerStatus(
                node_id=node_id, host=node.host if node else None, port=node.port if node else None,
                rack=node.rack if node else None, up=node_id in self._live,
                last_seen_ms=self._last_seen.get(node_id)))
        return result
