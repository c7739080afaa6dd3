"""BeginQuorumEpoch (key 53), v0, on the controller listener: a new leader announces its epoch.

v1 (KIP-853: leader endpoints, voter directory ids) is not advertised: voters are static.
"""

from __future__ import annotations

import asyncio

from gregor.broker.handlers import Handler, QuorumContext, quorum_partition
from gregor.protocol.messages.begin_quorum_epoch import BeginQuorumEpochRequest

API_KEY = 53


def handle(context: QuorumContext, request: BeginQuorumEpochRequest) -> asyncio.Future:
    return context.quorum.raft_request(quorum_partition(request).leader_id, request)


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
