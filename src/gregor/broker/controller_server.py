"""A controller-only node (`process.roles=controller`): one voter of the metadata quorum.

It keeps `__cluster_metadata-0` and the quorum-state file under `metadata.log.dir` (or the first
of `log.dirs`), runs the raft client through the RaftDriver, answers the quorum's requests on its
controller listener(s), and replays every committed record into its metadata image, as Kafka's
ControllerServer does. The voters elect a leader among themselves, replicate the log with
Fetch, and elect another when the leader dies or is cut off.

Not yet here (issue 7 goes on): brokers registering with the quorum and fetching its log, and
the active controller deciding topic and partition changes for them; until then a cluster's
controllers agree on the log but no broker uses it.
"""

from __future__ import annotations

import logging

from gregor.broker.config import BrokerConfig
from gregor.broker.dispatcher import Dispatcher
from gregor.broker.handlers import register_quorum
from gregor.broker.meta_properties import ensure_cluster_id
from gregor.broker.network import KafkaServer
from gregor.broker.raft_driver import RaftDriver, now_ms
from gregor.metadata.image import MetadataImage
from gregor.metadata.loader import MetadataLoader
from gregor.raft.client import RaftClient, RaftConfig
from gregor.raft.quorum_state_file import QuorumStateFile
from gregor.raft.storage_log import StorageLog, metadata_partition_dir

log = logging.getLogger("gregor.controller")


def raft_config(config: BrokerConfig) -> RaftConfig:
    """Kafka's `controller.quorum.*` keys as the raft client's timings."""
    return RaftConfig(election_timeout_ms=config.get("controller.quorum.election.timeout.ms"),
                      fetch_timeout_ms=config.get("controller.quorum.fetch.timeout.ms"),
                      election_backoff_max_ms=config.get("controller.quorum.election.backoff.max.ms"),
                      request_timeout_ms=config.get("controller.quorum.request.timeout.ms"),
                      retry_backoff_ms=config.get("controller.quorum.retry.backoff.ms"))


class ControllerServer:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.node_id = config.node_id
        self.bound_ports: dict[str, int] = {}
        self.raft_driver: RaftDriver | None = None
        self.loader: MetadataLoader | None = None
        self._server: KafkaServer | None = None

    @property
    def image(self) -> MetadataImage:
        return self.loader.image

    async def start(self) -> None:
        voters = self.config.quorum_voters()
        cluster_id = ensure_cluster_id([self.config.metadata_log_dir], self.node_id, self.config.get("cluster.id"),
                                       may_generate=len(voters) == 1)
        directory = self.config.metadata_log_dir
        raft = RaftClient(self.node_id, voters, StorageLog.open(directory, now_ms()),
                          QuorumStateFile(metadata_partition_dir(directory)), cluster_id, raft_config(self.config))
        self.loader = MetadataLoader(MetadataImage(cluster_id=cluster_id))
        self.raft_driver = RaftDriver(raft, voters, self._committed)
        self._server = KafkaServer(Dispatcher(self, register_quorum()), self.config.get("socket.request.max.bytes"))
        for endpoint in self.config.controller_listeners():
            self.bound_ports[endpoint.listener] = await self._server.listen(endpoint.listener, endpoint.host,
                                                                           endpoint.port)
        self.raft_driver.start()
        self._committed(raft.high_watermark)
        listeners = ", ".join(f"{name}://:{port}" for name, port in self.bound_ports.items())
        log.info("controller %d started: cluster %s, voters %s, listening on %s, metadata log in %s", self.node_id,
                 cluster_id, ",".join(str(v) for v in sorted(voters)), listeners, directory)

    def _committed(self, high_watermark: int) -> None:
        """Replay the newly committed records into the image."""
        self.loader.load(self.raft_driver.raft.committed(self.image.highest_offset + 1))

    async def stop(self) -> None:
        log.info("controller %d shutting down", self.node_id)
        if self._server is not None:
            await self._server.close()
        if self.raft_driver is not None:
            await self.raft_driver.close()
        log.info("controller %d stopped cleanly", self.node_id)
