"""DescribeQuorum (key 55), v0–v1: the metadata quorum's leader, epoch, high watermark and each
voter's and observer's log end offset (v1: fetch and caught-up timestamps), as
`kafka-metadata-quorum.sh describe` shows them.

Served by controllers on their listener and by a single-node broker (its own one-voter quorum)
on its client listeners. Only the leader answers; the others return NOT_LEADER_OR_FOLLOWER
naming the leader they know. v2 (KIP-853: node endpoints and directory ids) is not advertised:
voters are static.
"""

from __future__ import annotations

import asyncio

from gregor.broker.handlers import Handler, QuorumContext, quorum_partition
from gregor.protocol.messages.describe_quorum import DescribeQuorumRequest, DescribeQuorumResponse

API_KEY = 55


def handle(context: QuorumContext, request: DescribeQuorumRequest) -> DescribeQuorumResponse | asyncio.Future:
    quorum_partition(request)
    return context.quorum.describe_quorum(request)


HANDLERS = [Handler(API_KEY, 0, 1, handle)]
