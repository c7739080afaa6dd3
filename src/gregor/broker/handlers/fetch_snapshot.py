"""FetchSnapshot (key 59), v0, on the controller listener: a replica whose offset fell below the
leader's log start copies the leader's metadata snapshot in chunks.

v1 (KIP-853: replica directory id, leader endpoints) is not advertised: voters are static.
"""

from __future__ import annotations

import asyncio

from gregor.broker.handlers import Handler, QuorumContext, quorum_partition
from gregor.protocol.messages.fetch_snapshot import FetchSnapshotRequest

API_KEY = 59


def handle(context: QuorumContext, request: FetchSnapshotRequest) -> asyncio.Future:
    quorum_partition(request)
    return context.quorum.raft_request(request.replica_id, request)


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
