"""`meta.properties` in each log directory: the node id and the cluster id the data belongs to.

`gregor storage format` writes it, as Kafka's storage tool; without it Gregor writes it on first start. A node that
generates its own cluster id is only right when it is alone: the voters of a quorum must share
one (raft refuses a request from another cluster), so they take it from `cluster.id`.
"""

from __future__ import annotations

import os
import random
from typing import Sequence

from gregor.broker.config import ConfigError
from gregor.controller.quorum_controller import generate_cluster_id

META_PROPERTIES = "meta.properties"


def read_cluster_id(log_dirs: Sequence[str]) -> str | None:
    found = None
    for directory in log_dirs:
        path = os.path.join(directory, META_PROPERTIES)
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    key, _, value = line.strip().partition("=")
                    if key == "cluster.id":
                        found = value
    return found


def ensure_cluster_id(log_dirs: Sequence[str], node_id: int, configured: str | None, may_generate: bool) -> str:
    """The cluster id of the data (meta.properties), else `configured`, else a new one when
    `may_generate`; written to every log directory that lacks it.

    ConfigError when the data belongs to another cluster than `configured`, or when no id is
    known and none may be generated.
    """
    found = read_cluster_id(log_dirs)
    if found and configured and found != configured:
        raise ConfigError(f"the log directories belong to cluster {found}, not to cluster.id={configured}: "
                          f"point log.dirs at this cluster's data or fix cluster.id")
    cluster_id = found or configured
    if not cluster_id:
        if not may_generate:
            raise ConfigError("the nodes of a cluster must share one cluster id: set cluster.id to the "
                              "same value on every node (e.g. --override cluster.id=<22-character id>)")
        cluster_id = generate_cluster_id(random.Random())
    for directory in log_dirs:
        if not os.path.exists(os.path.join(directory, META_PROPERTIES)):
            write_meta_properties(directory, node_id, cluster_id)
    return cluster_id


def write_meta_properties(directory: str, node_id: int, cluster_id: str) -> None:
    """Kafka's KRaft meta.properties (version 1), written whole or not at all."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, META_PROPERTIES)
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        handle.write(f"version=1\nnode.id={node_id}\ncluster.id={cluster_id}\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(path + ".tmp", path)
