"""The `__cluster_metadata` log with a one-voter quorum (the embedded single-node mode).

With a single voter every append is committed as soon as it is durable, so the high watermark
follows the log end. The quorum-state file records the voter set and the leader epoch, which is
bumped at every start, as a KRaft voter does when it elects itself. The multi-voter quorum
(Vote, BeginQuorumEpoch, Fetch) replaces `append`'s immediate commit with the replicated one.
"""

from __future__ import annotations

import json
import os
from typing import Any, Iterator

from gregor.metadata.record_codec import decode_metadata_record, encode_metadata_record
from gregor.records.batch import scan_batches
from gregor.records.record import BatchBuilder, decode_records
from gregor.storage.log import Log, LogConfig

METADATA_TOPIC = "__cluster_metadata"
QUORUM_STATE_FILE = "quorum-state"
_MAX_BATCH = 8 * 1024 * 1024


class MetadataLog:
    def __init__(self, log_dir: str, node_id: int, now_ms: int) -> None:
        self.directory = os.path.join(log_dir, f"{METADATA_TOPIC}-0")
        self.node_id = node_id
        self.log = Log(self.directory, LogConfig(max_message_bytes=_MAX_BATCH), now_ms)
        self.leader_epoch = self._read_epoch() + 1
        self._write_quorum_state()

    def _quorum_state_path(self) -> str:
        return os.path.join(self.directory, QUORUM_STATE_FILE)

    def _read_epoch(self) -> int:
        try:
            with open(self._quorum_state_path(), encoding="utf-8") as handle:
                return int(json.load(handle).get("leaderEpoch", 0))
        except (OSError, ValueError):
            return 0

    def _write_quorum_state(self) -> None:
        state = {"clusterId": "", "leaderId": self.node_id, "leaderEpoch": self.leader_epoch,
                 "votedId": self.node_id, "appliedOffset": 0,
                 "currentVoters": [{"voterId": self.node_id}], "data_version": 0}
        path = self._quorum_state_path()
        with open(path + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(state, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(path + ".tmp", path)

    def append(self, records: list[Any], now_ms: int) -> int:
        """Append metadata records durably as one batch; returns the last offset."""
        builder = BatchBuilder()
        for record in records:
            builder.append(now_ms, None, encode_metadata_record(record))
        info = self.log.append_as_leader(builder.build(), self.leader_epoch, now_ms)
        self.log.flush(now_ms)
        self.log.high_watermark = self.log.log_end_offset
        return info.last_offset

    def read_committed(self, from_offset: int = 0) -> Iterator[tuple[int, Any]]:
        offset = max(from_offset, self.log.log_start_offset)
        while offset < self.log.high_watermark:
            data = self.log.read_bytes(offset, _MAX_BATCH, self.log.high_watermark)
            batches, _ = scan_batches(data)
            if not batches:
                return
            for header, pos in batches:
                if not header.is_control:
                    for record in decode_records(data, pos, header, _MAX_BATCH * 4):
                        if record.offset >= offset:
                            yield record.offset, decode_metadata_record(record.value)
                offset = header.last_offset + 1

    def close(self) -> None:
        self.log.flush(0)
        self.log.close()
