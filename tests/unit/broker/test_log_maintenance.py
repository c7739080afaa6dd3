"""Housekeeping writes the checkpoints off the event loop (an fsync can stall for tens of ms)."""

from __future__ import annotations

import asyncio
import os
import threading

from gregor.broker import log_maintenance
from gregor.broker.config import BrokerConfig
from gregor.broker.log_maintenance import LogMaintenance
from gregor.storage.checkpoint import read_checkpoint
from gregor.storage.log_config import LogConfig
from gregor.storage.log_manager import LogManager
from tests.unit.storage.helpers import batch

NOW = 1_000


def test_high_watermarks_are_checkpointed_on_a_thread_of_their_own(tmp_path, monkeypatch):
    directory = str(tmp_path / "logs")
    manager = LogManager([directory], LogConfig(), NOW)
    log = manager.create_log("t", 0, None, NOW)
    log.append_as_leader(batch(3), 0, NOW)
    log.high_watermark = 3
    writers: list[str] = []
    write = log_maintenance.write_checkpoints

    def recording(files):
        writers.append(threading.current_thread().name)
        write(files)

    monkeypatch.setattr(log_maintenance, "write_checkpoints", recording)
    config = BrokerConfig({"log.dirs": directory, "log.retention.check.interval.ms": "20",
                           "replica.high.watermark.checkpoint.interval.ms": "20"})
    path = os.path.join(directory, "replication-offset-checkpoint")

    async def run() -> None:
        maintenance = LogMaintenance(config)
        maintenance.start(manager)
        for _ in range(200):
            if os.path.exists(path):
                break
            await asyncio.sleep(0.02)
        maintenance.stop()

    asyncio.run(run())
    assert read_checkpoint(path) == {("t", 0): 3}
    assert writers and all(name.startswith("checkpoint-writer") for name in writers)
