"""EndQuorumEpoch (key 54), v0, on the controller listener: a resigning leader asks the voters
to elect a successor now instead of waiting for the fetch timeout.

v1 (KIP-853: leader endpoints, candidate directory ids) is not advertised: voters are static.
"""

from __future__ import annotations

import asyncio

from gregor.broker.handlers import Handler, QuorumContext, quorum_partition
from gregor.protocol.messages.end_quorum_epoch import EndQuorumEpochRequest

API_KEY = 54


def handle(context: QuorumContext, request: EndQuorumEpochRequest) -> asyncio.Future:
    return context.quorum.raft_request(quorum_partition(request).leader_id, request)


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
