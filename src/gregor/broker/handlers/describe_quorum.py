"""DescribeQuorum (key 55), v0–v2: the metadata quorum's leader, epoch, high watermark and each
voter's and observer's log end offset (v1: fetch and caught-up timestamps; v2, KIP-853: error
messages, directory ids and the voters' controller endpoints), as `kafka-metadata-quorum.sh
describe` shows them.

Served by controllers on their listener and by a single-node broker (its own one-voter quorum)
on its client listeners. Only the leader answers; the others return NOT_LEADER_OR_FOLLOWER
naming the leader they know. Voters are static (`controller.quorum.voters`): their directory ids
are unknown and reported as the zero id, as Kafka reports a voter set without them.
"""

from __future__ import annotations

import asyncio

from gregor.broker.handlers import Handler, QuorumContext, quorum_partition
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages.describe_quorum import DescribeQuorumRequest, DescribeQuorumResponse
from gregor.protocol.messages import Message

API_KEY = 55
_NODES_VERSION = 2
_NOT_LEADER = "this node does not lead the metadata quorum; the leader it knows is leader_id"


def handle(context: QuorumContext, request: DescribeQuorumRequest) -> asyncio.Future[Message]:
    quorum_partition(request)
    answer = context.quorum.describe_quorum(request)
    if context.version < _NODES_VERSION:
        return answer
    return asyncio.ensure_future(_with_nodes(answer, context.quorum.voter_endpoints()))


async def _with_nodes(answer: asyncio.Future[Message],
                      endpoints: dict[int, list[tuple[str, str, int]]]) -> DescribeQuorumResponse:
    """The v2 answer: null error messages where there is no error, and, from the leader, the
    voters' endpoints (Kafka sends no nodes with an error)."""
    response = await answer
    assert isinstance(response, DescribeQuorumResponse)
    if response.error_code == ErrorCode.NONE:
        response.error_message = None
    failed = response.error_code != ErrorCode.NONE
    for topic in response.topics:
        for partition in topic.partitions:
            if partition.error_code == ErrorCode.NONE:
                partition.error_message = None
            else:
                failed = True
                partition.error_message = (_NOT_LEADER if partition.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
                                           else ErrorCode(partition.error_code).name)
    if not failed:
        response.nodes = [DescribeQuorumResponse.Node(node_id=node, listeners=[
            DescribeQuorumResponse.Listener(name=name, host=host, port=port) for name, host, port in listeners])
            for node, listeners in sorted(endpoints.items())]
    return response


HANDLERS = [Handler(API_KEY, 0, 2, handle)]
