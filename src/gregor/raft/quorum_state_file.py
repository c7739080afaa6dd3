"""Kafka's `quorum-state` file: the election state a voter must not forget across restarts.

It lives in the metadata partition directory (`__cluster_metadata-0/quorum-state`) as the JSON
form of QuorumStateData with a `data_version` field, exactly as Kafka's FileQuorumStateStore
writes it, so a voter never votes twice or reuses an epoch. Written atomically: a temporary
file is fsynced, renamed over the old one, and the directory is fsynced.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

QUORUM_STATE_FILE = "quorum-state"
NO_ID = -1


class QuorumStateFileError(ValueError):
    """The quorum-state file exists but is not a state this build can read."""


@dataclass(frozen=True)
class ElectionState:
    """What the file holds: the epoch, the leader if known, the vote if cast, the voter set."""

    epoch: int
    leader_id: int = NO_ID
    voted_id: int = NO_ID
    voters: frozenset[int] | None = None
    cluster_id: str = ""
    applied_offset: int = 0


class QuorumStateFile:
    def __init__(self, directory: str) -> None:
        self.path = os.path.join(directory, QUORUM_STATE_FILE)

    def read(self) -> ElectionState | None:
        """The stored state, or None when no state was ever written."""
        try:
            with open(self.path, encoding="utf-8") as handle:
                data = json.load(handle)
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as error:
            raise QuorumStateFileError(f"cannot read {self.path}: {error}") from error
        try:
            version = int(data.get("data_version", 0))
            if version not in (0, 1):
                raise QuorumStateFileError(f"{self.path} has data_version {version}; this build reads 0 and 1")
            voters = data.get("currentVoters")
            return ElectionState(
                epoch=int(data["leaderEpoch"]), leader_id=int(data.get("leaderId", NO_ID)),
                voted_id=int(data.get("votedId", NO_ID)),
                voters=frozenset(int(v["voterId"]) for v in voters) if voters is not None else None,
                cluster_id=str(data.get("clusterId", "")), applied_offset=int(data.get("appliedOffset", 0)))
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise QuorumStateFileError(f"{self.path} is not a quorum state: {error}") from error

    def write(self, state: ElectionState) -> None:
        """Replace the stored state durably (version 0 of QuorumStateData, with the voter set)."""
        data = {
            "clusterId": state.cluster_id, "leaderId": state.leader_id, "leaderEpoch": state.epoch,
            "votedId": state.voted_id, "appliedOffset": state.applied_offset,
            "currentVoters": ([{"voterId": v} for v in sorted(state.voters)] if state.voters is not None
                              else None),
            "data_version": 0,
        }
        directory = os.path.dirname(self.path)
        os.makedirs(directory, exist_ok=True)
        temporary = self.path + ".tmp"
        with open(temporary, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, self.path)
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


class MemoryQuorumStateStore:
    """The quorum-state store of a simulated voter: survives a simulated crash, touches no disk."""

    def __init__(self) -> None:
        self.state: ElectionState | None = None

    def read(self) -> ElectionState | None:
        return self.state

    def write(self, state: ElectionState) -> None:
        self.state = state
