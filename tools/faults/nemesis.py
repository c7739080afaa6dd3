"""Faults, each a start and a heal, recorded in the history as nemesis operations:

    kill                 kill -9 a node (broker or controller), restarted at the heal
    pause                SIGSTOP a node, SIGCONT at the heal
    partition-leader     a partition's leader cut from its followers, both ways
    isolate-leader       a partition's leader cut from every other node (controllers too) while
                         the clients still reach it: the controller elects another leader, the old
                         one must not acknowledge what the new one will not have
    partition-controller the active controller cut from a broker, both ways
    partition-client     the clients cut from a partition's leader, both ways
    partition-quorum     the active controller cut from the other controllers (three voters)
    slow                 every link between two nodes delayed 20-200 ms per chunk

Targets are drawn from a seeded random source, so a seed replays the same choices (the timing of
a real cluster does not replay exactly: which node leads when may differ).
"""

from __future__ import annotations

import random
from collections.abc import Callable

from tools.faults.cluster import Cluster, Node
from tools.faults.history import History
from tools.faults.proxy import CLIENT

FAULTS = ("kill", "pause", "partition-leader", "isolate-leader", "partition-controller", "partition-client",
          "partition-quorum", "slow")


class Nemesis:
    def __init__(self, cluster: Cluster, history: History, topic: str, rng: random.Random) -> None:
        self.cluster, self.history, self.topic, self.rng = cluster, history, topic, rng

    def start(self, fault: str) -> Callable[[], None]:
        """Inflict `fault`; returns the heal."""
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r} (one of {', '.join(FAULTS)})")
        return getattr(self, "_" + fault.replace("-", "_"))()

    def _record(self, fault: str, **details: object) -> Callable[[Callable[[], None]], Callable[[], None]]:
        self.history.nemesis(fault, "start", **details)

        def wrap(heal: Callable[[], None]) -> Callable[[], None]:
            def healed() -> None:
                heal()
                self.history.nemesis(fault, "stop", **details)
            return healed
        return wrap

    def _node(self, brokers_only: bool = False) -> Node:
        candidates = list(self.cluster.brokers.values()) * (2 if not brokers_only else 1)
        if not brokers_only:
            candidates += self.cluster.controllers
        return self.rng.choice(candidates)

    def _leader(self) -> tuple[Node, list[Node]]:
        """A partition's leader and its other replicas (all brokers but the leader, RF=3 of 3)."""
        states = self.cluster.partitions(self.topic)
        leaders = sorted({leader for leader, _ in states.values() if leader in self.cluster.brokers})
        leader_id = self.rng.choice(leaders) if leaders else self.rng.choice(sorted(self.cluster.brokers))
        return self.cluster.brokers[leader_id], [n for i, n in self.cluster.brokers.items() if i != leader_id]

    def _kill(self) -> Callable[[], None]:
        node = self._node()
        node.kill9()
        return self._record("kill", node=node.name)(node.start)

    def _pause(self) -> Callable[[], None]:
        node = self._node()
        node.pause()
        return self._record("pause", node=node.name)(node.resume)

    def _cut(self, fault: str, side: list[str], other: list[str]) -> Callable[[], None]:
        proxy = self.cluster.proxy
        proxy.partition(side, other)

        def heal() -> None:
            for a in side:
                for b in other:
                    proxy.heal(a, b)
                    proxy.heal(b, a)
        return self._record(fault, side=side, other=other)(heal)

    def _partition_leader(self) -> Callable[[], None]:
        leader, followers = self._leader()
        return self._cut("partition-leader", [leader.name], [n.name for n in followers])

    def _isolate_leader(self) -> Callable[[], None]:
        leader, followers = self._leader()
        others = [n.name for n in followers] + [n.name for n in self.cluster.controllers]
        return self._cut("isolate-leader", [leader.name], others)

    def _partition_controller(self) -> Callable[[], None]:
        controller = self.cluster.active_controller()
        broker = self._node(brokers_only=True)
        return self._cut("partition-controller", [controller.name], [broker.name])

    def _partition_client(self) -> Callable[[], None]:
        leader, _ = self._leader()
        return self._cut("partition-client", [CLIENT], [leader.name])

    def _partition_quorum(self) -> Callable[[], None]:
        controller = self.cluster.active_controller()
        others = [n.name for n in self.cluster.controllers if n is not controller]
        if not others:
            raise ValueError("partition-quorum needs more than one controller (--controllers 3)")
        return self._cut("partition-quorum", [controller.name], others)

    def _slow(self) -> Callable[[], None]:
        a, b = self.rng.sample([n.name for n in self.cluster.nodes] + [CLIENT], 2)
        delay = round(self.rng.uniform(0.02, 0.2), 3)
        proxy = self.cluster.proxy
        proxy.slow(a, b, delay)
        proxy.slow(b, a, delay)

        def heal() -> None:
            proxy.heal(a, b)
            proxy.heal(b, a)
        return self._record("slow", side=[a], other=[b], delay_s=delay)(heal)
