"""BrokerHeartbeat (key 63), v0, on the controller listener: a broker keeps its session,
reports how far it replayed the metadata log, and asks to be fenced or to shut down.

The answer says whether it has caught up, whether it is fenced, and whether a controlled
shutdown may finish (`gregor.controller.broker_heartbeats`). v1 (offline log directories,
JBOD) is not advertised.
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.controller.operations import ControllerResult
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages.broker_heartbeat import BrokerHeartbeatRequest, BrokerHeartbeatResponse

API_KEY = 63


async def handle(context: QuorumContext, request: BrokerHeartbeatRequest) -> BrokerHeartbeatResponse:
    server = context.quorum

    def heartbeat() -> ControllerResult:
        reply = server.heartbeats.heartbeat(
            server.image, request.broker_id, request.broker_epoch, request.current_metadata_offset,
            request.want_fence, request.want_shut_down, server.unclean_allowed, context.now_ms)
        return ControllerResult(reply, reply.records)

    try:
        reply = await server.submit(heartbeat)
    except KafkaError as error:
        return BrokerHeartbeatResponse(error_code=error.code)
    return BrokerHeartbeatResponse(error_code=reply.error, is_caught_up=reply.is_caught_up,
                                   is_fenced=reply.is_fenced, should_shut_down=reply.should_shut_down)


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
