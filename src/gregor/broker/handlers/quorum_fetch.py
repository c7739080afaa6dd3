"""Fetch (key 1), v13–v15, on the controller listener: voters and observers replicate the
`__cluster_metadata` log from the quorum leader (KRaft's Fetch-based replication).

The leader answers with records, a diverging epoch to truncate to, or the snapshot to load
instead; a fetch with nothing new waits up to its max wait. v16–v17 (KIP-853: node endpoints,
replica directory ids) are not advertised: voters are static.
"""

from __future__ import annotations

import asyncio

from gregor.broker.handlers import Handler, QuorumContext, quorum_partition
from gregor.protocol.messages.fetch import FetchRequest
from gregor.raft.messages import fetch_replica_id

API_KEY = 1


def handle(context: QuorumContext, request: FetchRequest) -> asyncio.Future:
    quorum_partition(request)
    return context.quorum.raft_request(fetch_replica_id(request), request)


HANDLERS = [Handler(API_KEY, 13, 15, handle)]
