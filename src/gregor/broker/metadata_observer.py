"""A broker-only node's copy of the cluster metadata (Kafka's broker-side raft observer).

The node is not a voter: its raft client fetches `__cluster_metadata` from the quorum leader
(found by asking any voter) into its own `metadata.log.dir`, never votes or stands, and every
newly committed record is replayed into the metadata image and published, as on a controller.
The offset replayed so far is what the broker reports in its heartbeats, so the controller
unfences it only once it has caught up. A restart replays the local copy first and then fetches
only what it missed.
"""

from __future__ import annotations

import asyncio
import logging

from gregor.broker.config import BrokerConfig
from gregor.broker.controller_server import raft_config, snapshot_policy
from gregor.broker.clock import Clock, wall_clock_ms
from gregor.broker.peer_channel import PLAINTEXT
from gregor.broker.raft_driver import RaftDriver
from gregor.controller.metadata_replay import MetadataReplay
from gregor.metadata.image import MetadataImage
from gregor.metadata.loader import MetadataLoader, MetadataPublisher
from gregor.raft.client import RaftClient
from gregor.raft.quorum_state_file import QuorumStateFile
from gregor.raft.storage_log import StorageLog, metadata_partition_dir

log = logging.getLogger("gregor.broker")


class MetadataObserver:
    def __init__(self, config: BrokerConfig, cluster_id: str, clock: Clock = wall_clock_ms) -> None:
        self._clock = clock
        directory = config.metadata_log_dir
        voters = config.quorum_voters()
        self.raft = RaftClient(config.node_id, voters, StorageLog.open(directory, self._clock()),
                               QuorumStateFile(metadata_partition_dir(directory)), cluster_id, raft_config(config))
        self.loader = MetadataLoader(MetadataImage(cluster_id=cluster_id))
        self.replay = MetadataReplay(self.raft, self.loader, snapshot_policy(config))
        self.driver = RaftDriver(self.raft, voters, self._committed, clock=clock,
                                 security=config.peer_security.get("controller", PLAINTEXT))
        self._caught_up: asyncio.Future | None = None

    @property
    def image(self) -> MetadataImage:
        return self.loader.image

    @property
    def replayed_offset(self) -> int:
        """The offset of the last metadata record in the image (-1 before any)."""
        return self.image.highest_offset

    def install(self, publisher: MetadataPublisher) -> None:
        self.loader.install(publisher)

    async def start(self) -> MetadataImage:
        """Fetch from the quorum until the leader's high watermark is known and replayed (the
        local copy's records count as committed only then)."""
        self._caught_up = asyncio.get_running_loop().create_future()
        self.driver.start()
        await self._caught_up
        return self.image

    def _committed(self, high_watermark: int) -> None:
        self.replay.catch_up(self._clock())
        if high_watermark > 0 and self._caught_up is not None and not self._caught_up.done():
            log.info("metadata caught up to offset %d", self.replayed_offset)
            self._caught_up.set_result(None)

    async def close(self) -> None:
        await self.driver.close()
