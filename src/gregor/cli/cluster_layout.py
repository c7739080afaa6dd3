"""The layout of a local cluster on disk, for `gregor cluster start`: which nodes it has, their
ids, ports and directories, each node's server.properties, and the cluster's identity.

    DIR/cluster.properties                 cluster.id, brokers, controllers (written once)
    DIR/broker-1/server.properties         node.id=1, PLAINTEXT://127.0.0.1:P
    DIR/broker-1/data/                     log.dirs
    DIR/broker-1/server.log                the process's stdout and stderr
    ...
    DIR/controller-101/...                 node.id=101, CONTROLLER://127.0.0.1:P+N
    DIR/tls/, DIR/client.properties, ...   with --secure (cluster_security)

Brokers have node ids 1..N and ports P..P+N-1; controllers (the metadata quorum's voters) have
node ids 101..100+M and the M ports after the brokers'. The shape and the cluster id are fixed
when the directory is first used; a restart reuses them (and the data), and refuses another shape.
"""

from __future__ import annotations

import os
import random
import socket
from dataclasses import dataclass
from typing import Mapping

from gregor.broker.config import BrokerConfig, ConfigError, read_properties
from gregor.cli.cluster_security import BROKER_LISTENER, SecureCluster
from gregor.cli.common import ToolError, UsageError
from gregor.controller.quorum_controller import generate_cluster_id

HOST = "127.0.0.1"
CLUSTER_FILE = "cluster.properties"
MAX_BROKERS = 100
MAX_CONTROLLERS = 9
CONTROLLER_ID_BASE = 100

# Set by the tool for each node; an --override of one of them would break the cluster's wiring.
OWNED_KEYS = frozenset({"node.id", "broker.id", "process.roles", "listeners", "advertised.listeners",
                        "controller.listener.names", "controller.quorum.voters", "cluster.id", "log.dirs",
                        "log.dir", "metadata.log.dir", "inter.broker.listener.name"})


@dataclass(frozen=True)
class Node:
    role: str  # "broker" or "controller"
    node_id: int
    port: int
    directory: str

    @property
    def name(self) -> str:
        return f"{self.role}-{self.node_id}"

    @property
    def address(self) -> str:
        return f"{HOST}:{self.port}"

    @property
    def config_path(self) -> str:
        return os.path.join(self.directory, "server.properties")

    @property
    def log_path(self) -> str:
        return os.path.join(self.directory, "server.log")

    @property
    def data_dir(self) -> str:
        return os.path.join(self.directory, "data")


def nodes(root: str, brokers: int, controllers: int, ports: list[int]) -> list[Node]:
    """Brokers first, then controllers, on `ports` in that order."""
    root = os.path.abspath(root)
    ids = [("broker", i) for i in range(1, brokers + 1)]
    ids += [("controller", CONTROLLER_ID_BASE + i) for i in range(1, controllers + 1)]
    return [Node(role, node_id, port, os.path.join(root, f"{role}-{node_id}"))
            for (role, node_id), port in zip(ids, ports)]


def choose_ports(base: int, count: int) -> list[int]:
    """`count` consecutive ports from `base`, or (base 0) ports the OS reports free."""
    if base == 0:
        return [_free_port() for _ in range(count)]
    if not 1 <= base <= 65536 - count:
        raise UsageError(f"--base-port must be between 1 and {65536 - count} for {count} nodes (or 0 for free "
                         f"ports), got {base}")
    return list(range(base, base + count))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def check_ports_free(cluster: list[Node]) -> None:
    for node in cluster:
        with socket.socket() as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the node binds: TIME_WAIT is no obstacle
            try:
                sock.bind((HOST, node.port))
            except OSError as error:
                raise ToolError(f"port {node.port} ({node.name}) is in use ({error.strerror}): is a cluster already "
                                f"running there? Pick another --base-port, or 0 for free ports") from None


def cluster_defaults(brokers: int) -> dict[str, str]:
    """What a replicated development cluster wants on top of Kafka's defaults: new topics and the
    internal ones replicated on up to three brokers, groups that rebalance at once. Kafka's
    min.insync.replicas=1 stays, so acks=all writes go on while one broker of three is down."""
    factor = str(min(3, brokers))
    return {"default.replication.factor": factor, "offsets.topic.replication.factor": factor,
            "transaction.state.log.replication.factor": factor, "group.initial.rebalance.delay.ms": "0"}


def sections(node: Node, cluster: list[Node], cluster_id: str, overrides: Mapping[str, str],
             secure: SecureCluster | None = None) -> list[tuple[str, dict[str, str]]]:
    """A node's server.properties as (comment, keys) sections: its wiring (secured with --secure),
    the cluster defaults, then --override. Defaults and overrides go to controllers too: the active
    controller places new topics (default.replication.factor, num.partitions) and answers with
    their configs."""
    voters = ",".join(f"{n.node_id}@{n.address}" for n in cluster if n.role == "controller")
    listener = "CONTROLLER" if node.role == "controller" else BROKER_LISTENER if secure else "PLAINTEXT"
    wiring = {"node.id": str(node.node_id), "process.roles": node.role, "listeners": f"{listener}://{node.address}",
              "controller.listener.names": "CONTROLLER", "controller.quorum.voters": voters,
              "cluster.id": cluster_id, "log.dirs": node.data_dir}
    if secure is not None:
        if node.role == "broker":
            wiring["inter.broker.listener.name"] = BROKER_LISTENER
        wiring.update(secure.node_keys(node.name, node.role))
    brokers = sum(1 for n in cluster if n.role == "broker")
    return [("this node in the cluster", wiring),
            ("development defaults; min.insync.replicas stays Kafka's 1, so acks=all writes go on\n"
             "while brokers are down (--override min.insync.replicas=2 for production-like durability)",
             cluster_defaults(brokers)),
            ("--override", dict(overrides))]


def properties(node: Node, cluster: list[Node], cluster_id: str, overrides: Mapping[str, str],
               secure: SecureCluster | None = None) -> dict[str, str]:
    merged: dict[str, str] = {}
    for _, keys in sections(node, cluster, cluster_id, overrides, secure):
        merged.update(keys)
    return merged


def check_overrides(overrides: Mapping[str, str]) -> None:
    owned = sorted(OWNED_KEYS.intersection(overrides))
    if owned:
        raise UsageError(f"--override {owned[0]}: set by gregor cluster start for each node "
                         f"(use --base-port, --dir, --brokers or --controllers)")


def validate(node: Node, props: Mapping[str, str]) -> None:
    """Refuse, before anything starts, what the node would refuse (a bad --override value)."""
    try:
        BrokerConfig(props)
    except ConfigError as error:
        raise UsageError(f"{node.name} would not start: {error}") from None


def render(node: Node, cluster: list[Node], cluster_id: str, overrides: Mapping[str, str],
           secure: SecureCluster | None = None) -> str:
    root = os.path.dirname(node.directory)
    lines = [f"# {node.role} {node.node_id} of the local cluster in {root}, written by `gregor cluster start`",
             "# at each start (change settings with its --override). To run this node by hand:",
             f"#   gregor server --config {node.config_path} --log-file {node.log_path}"]
    for comment, keys in sections(node, cluster, cluster_id, overrides, secure):
        if keys:
            lines += ["", "# " + comment.replace("\n", "\n# ")] + [f"{key}={value}" for key, value in keys.items()]
    return "\n".join(lines) + "\n"


def saved_cluster_id(root: str, brokers: int, controllers: int) -> str | None:
    """The cluster id DIR/cluster.properties holds, or None for a new or empty directory.
    ToolError for a cluster of another shape or a directory holding something else."""
    path = os.path.join(root, CLUSTER_FILE)
    if os.path.exists(path):
        try:
            saved = read_properties(path)
            cluster_id, had = saved["cluster.id"], (int(saved["brokers"]), int(saved["controllers"]))
        except (OSError, ConfigError, KeyError, ValueError) as error:
            raise ToolError(f"{path} is unreadable ({error}): remove {root} or use another --dir") from None
        if had != (brokers, controllers):
            raise ToolError(f"{root} holds a cluster of {_shape(*had)} (cluster id {cluster_id}), not "
                            f"{_shape(brokers, controllers)}: start it with --brokers {had[0]} --controllers "
                            f"{had[1]}, or use another --dir")
        return cluster_id
    if os.path.exists(root) and not os.path.isdir(root):
        raise ToolError(f"{root} is not a directory: use another --dir")
    if os.path.isdir(root) and os.listdir(root):
        raise ToolError(f"{root} is not empty and holds no {CLUSTER_FILE}: use an empty or new --dir")
    return None


def new_cluster_id() -> str:
    return generate_cluster_id(random.Random())


def _shape(brokers: int, controllers: int) -> str:
    return f"{brokers} broker{'s' * (brokers != 1)} and {controllers} controller{'s' * (controllers != 1)}"


def check(cluster: list[Node], cluster_id: str, overrides: Mapping[str, str],
          secure: SecureCluster | None = None) -> None:
    """Check every node's properties as the node will check them."""
    for node in cluster:
        validate(node, properties(node, cluster, cluster_id, overrides, secure))


def write(cluster: list[Node], cluster_id: str, overrides: Mapping[str, str],
          secure: SecureCluster | None = None) -> None:
    """DIR/cluster.properties (once) and every node's server.properties and directory."""
    root = os.path.dirname(cluster[0].directory)
    path = os.path.join(root, CLUSTER_FILE)
    if not os.path.exists(path):
        brokers = sum(1 for node in cluster if node.role == "broker")
        os.makedirs(root, exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(f"# A local cluster made by `gregor cluster start`; its shape is fixed.\n"
                         f"cluster.id={cluster_id}\nbrokers={brokers}\ncontrollers={len(cluster) - brokers}\n")
    for node in cluster:
        os.makedirs(node.directory, exist_ok=True)
        # --secure puts passwords in the JAAS keys: readable by the owner only
        descriptor = os.open(node.config_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if secure else 0o644)
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(render(node, cluster, cluster_id, overrides, secure))
