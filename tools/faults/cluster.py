"""A cluster of real `gregor server` processes behind the fault proxy: controller-only voters and
broker-only nodes on loopback ports, every listener reached through its proxy port, each process
started in a session of its own and stopped by its PID."""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from gregor.protocol.headers import decode_response_header, encode_request
from gregor.protocol.messages.describe_quorum import (
    DescribeQuorumRequest,
    DescribeQuorumResponse,
)
from gregor.protocol.primitives import Reader
from tools.faults.proxy import Proxy
from tools.ports import free_port

CLUSTER_ID = "R3JlZ29yRmF1bHRIYXJuZXNz"
# Short sessions and lag limits, so that a fault is noticed (and healed) within seconds.
FAST_FAILOVER = {"broker.heartbeat.interval.ms": "300", "replica.lag.time.max.ms": "3000",
                 "replica.fetch.backoff.ms": "200", "replica.high.watermark.checkpoint.interval.ms": "500"}
CONTROLLER_SESSION = {"broker.session.timeout.ms": "1500"}
# With several voters a broker finds a new active controller only once its quorum fetch to the old
# one fails (controller.quorum.fetch.timeout.ms, 2 s): a shorter session fences every broker at
# each controller election. Kafka's defaults keep the same order (9 s sessions, 2 s fetch timeout).
QUORUM_SESSION = {"broker.session.timeout.ms": "4000"}


def _answers(port: int) -> bool:
    """One ApiVersions v0 round trip on the node's own port."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as sock:
            body = struct.pack(">hhih", 18, 0, 1, 6) + b"faults"
            sock.sendall(struct.pack(">i", len(body)) + body)
            return len(sock.recv(4)) == 4
    except OSError:
        return False


class Node:
    """One server process: `port` is its own listener, `proxy_port` the one everybody else uses."""

    def __init__(self, name: str, node_id: int, root: str, proxy: Proxy, env: dict[str, str] | None) -> None:
        self.name, self.node_id, self.proxy = name, node_id, proxy
        self.directory = os.path.join(root, name)
        os.makedirs(self.directory, exist_ok=True)
        self.data_dir = os.path.join(self.directory, "data")
        self.log_path = os.path.join(self.directory, "server.log")
        self.port = free_port()
        self.proxy_port = proxy.reserve(name)
        proxy.target(name, self.port)
        self.overrides: dict[str, str] = {}
        self.env = env
        self.process: subprocess.Popen | None = None
        self.paused = False

    def start(self, timeout: float = 60) -> None:
        args = [sys.executable, "-m", "gregor.cli.main", "server", "--override", f"log.dirs={self.data_dir}"]
        for key, value in self.overrides.items():
            args += ["--override", f"{key}={value}"]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                            env={**os.environ, **self.env} if self.env else None)
        self.proxy.pids[self.name] = self.process.pid
        self.paused = False
        deadline = time.monotonic() + timeout
        while not _answers(self.port):
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.process.returncode}:\n{self.tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not answer within {timeout}s:\n{self.tail()}")
            time.sleep(0.1)

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def kill9(self) -> None:
        if self.running:
            assert self.process is not None
            self.process.kill()
            self.process.wait()
        self.paused = False

    def pause(self) -> None:
        """SIGSTOP: the process keeps its sockets and answers nothing (a long GC pause, a frozen VM)."""
        if self.running and not self.paused:
            assert self.process is not None
            self.process.send_signal(signal.SIGSTOP)
            self.paused = True

    def resume(self) -> None:
        if self.running and self.paused:
            assert self.process is not None
            self.process.send_signal(signal.SIGCONT)
        self.paused = False

    def stop(self, timeout: float = 30) -> None:
        self.resume()
        if self.running:
            assert self.process is not None
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def tail(self, size: int = 3000) -> str:
        try:
            with open(self.log_path, "rb") as handle:
                return handle.read().decode(errors="replace")[-size:]
        except OSError:
            return ""


class Cluster:
    """`controllers` controller-only voters (nodes c1..) and `brokers` brokers (b<id>)."""

    def __init__(self, root: str, brokers: int = 3, controllers: int = 1, overrides: dict[str, str] | None = None,
                 env: dict[str, str] | None = None) -> None:
        self.root = root
        self.proxy = Proxy()
        self.controllers = [Node(f"c{i}", i, root, self.proxy, env) for i in range(1, controllers + 1)]
        self.brokers = {i: Node(f"b{i}", i, root, self.proxy, env)
                        for i in range(controllers + 1, controllers + brokers + 1)}
        voters = ",".join(f"{node.node_id}@127.0.0.1:{node.proxy_port}" for node in self.controllers)
        for node in self.controllers:
            node.overrides = {"process.roles": "controller", "node.id": str(node.node_id), "cluster.id": CLUSTER_ID,
                              "listeners": f"CONTROLLER://127.0.0.1:{node.port}",
                              "controller.listener.names": "CONTROLLER", "controller.quorum.voters": voters,
                              **(CONTROLLER_SESSION if controllers == 1 else QUORUM_SESSION)}
        replication = str(min(brokers, 3))
        for node in self.brokers.values():
            node.overrides = {"process.roles": "broker", "node.id": str(node.node_id), "cluster.id": CLUSTER_ID,
                              "listeners": f"PLAINTEXT://127.0.0.1:{node.port}",
                              "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.proxy_port}",
                              "controller.quorum.voters": voters, "controller.listener.names": "CONTROLLER",
                              "default.replication.factor": replication,
                              "offsets.topic.replication.factor": replication, "offsets.topic.num.partitions": "3",
                              "transaction.state.log.num.partitions": "3",
                              **FAST_FAILOVER, **(overrides or {})}

    @property
    def nodes(self) -> list[Node]:
        return [*self.controllers, *self.brokers.values()]

    def node(self, name: str) -> Node:
        return next(node for node in self.nodes if node.name == name)

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{node.proxy_port}" for node in self.brokers.values())

    def start(self) -> Cluster:
        for node in self.controllers:
            node.start()
        for node in self.brokers.values():
            node.start()
        self.wait_for_brokers(len(self.brokers))
        return self

    def stop(self) -> None:
        """Brokers first (their controlled shutdown needs a controller), then the controllers."""
        self.proxy.heal_all()
        for node in self.brokers.values():
            node.stop()
        for node in self.controllers:
            node.stop()
        self.proxy.close()

    def admin(self) -> AdminClient:
        return AdminClient({"bootstrap.servers": self.bootstrap})

    def wait_for_brokers(self, count: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                if len(self.admin().list_topics(timeout=5).brokers) == count:
                    return
            except KafkaException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"fewer than {count} live brokers after {timeout}s")
            time.sleep(0.2)

    def create_topic(self, name: str, partitions: int, replication_factor: int = 3, **config: str) -> None:
        admin = self.admin()  # kept alive until the result: a dropped client cancels its requests
        futures = admin.create_topics([NewTopic(name, partitions, replication_factor, config=config)],
                                             operation_timeout=30, request_timeout=30)
        futures[name].result(40)
        self.wait_for(name, lambda states: len(states) == partitions and all(
            leader >= 0 and len(isr) == replication_factor for leader, isr in states.values()))

    def partitions(self, topic: str) -> dict[int, tuple[int, list[int]]]:
        """partition -> (leader, isr) as the metadata shows it now ({} when no broker answers)."""
        try:
            found = self.admin().list_topics(topic, timeout=5).topics.get(topic)
        except KafkaException:
            return {}
        if found is None or found.error is not None:
            return {}
        return {p.id: (p.leader, list(p.isrs)) for p in found.partitions.values()}

    def wait_for(self, topic: str, condition: Callable[[dict[int, tuple[int, list[int]]]], bool],
                 timeout: float = 60) -> dict[int, tuple[int, list[int]]]:
        deadline = time.monotonic() + timeout
        while True:
            states = self.partitions(topic)
            if states and condition(states):
                return states
            if time.monotonic() > deadline:
                raise RuntimeError(f"{topic} did not reach the expected state within {timeout}s: {states}")
            time.sleep(0.2)

    def wait_for_full_isr(self, topic: str, replication_factor: int = 3, timeout: float = 120) -> None:
        self.wait_for(topic, lambda states: all(leader >= 0 and len(isr) == replication_factor
                                                for leader, isr in states.values()), timeout)

    def active_controller(self) -> Node:
        """The quorum leader, as the controllers' own DescribeQuorum answers name it."""
        for node in self.controllers:
            if node.running and not node.paused:
                leader = quorum_leader(node.port)
                if leader is not None:
                    return next((c for c in self.controllers if c.node_id == leader), self.controllers[0])
        return self.controllers[0]


def quorum_leader(port: int) -> int | None:
    """The leader id a controller reports for __cluster_metadata (None when it does not answer)."""
    request = DescribeQuorumRequest(topics=[DescribeQuorumRequest.TopicData(
        topic_name="__cluster_metadata", partitions=[DescribeQuorumRequest.PartitionData(partition_index=0)])])
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
            sock.sendall(encode_request(7, "faults", request, 1))
            size = struct.unpack(">i", sock.recv(4, socket.MSG_WAITALL))[0]
            frame = memoryview(sock.recv(size, socket.MSG_WAITALL))
        _, body = decode_response_header(frame, request.API_KEY, 1)
        leader = DescribeQuorumResponse.decode(Reader(frame, body), 1).topics[0].partitions[0].leader_id
    except (OSError, struct.error, IndexError):
        return None
    return leader if leader >= 0 else None
