"""Vote (key 52), v0, on the controller listener: a candidate asks this voter for its vote.

v1 (KIP-853: voter directory ids and endpoints) is not advertised: the voter set is static,
from `controller.quorum.voters`.
"""

from __future__ import annotations

import asyncio

from gregor.broker.handlers import Handler, QuorumContext, quorum_partition
from gregor.protocol.messages.vote import VoteRequest

API_KEY = 52


def handle(context: QuorumContext, request: VoteRequest) -> asyncio.Future:
    return context.quorum.raft_request(quorum_partition(request).candidate_id, request)


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
