"""BrokerRegistration (key 62), v0–v2, on the controller listener: a broker joins the cluster.

The active controller checks the cluster id, refuses a second live registration of the same
node id from another incarnation (DUPLICATE_BROKER_REGISTRATION, as Kafka does while the first
one's session lasts: a session this controller heard, not only the one it granted every
registered broker when it took over, or a restarted combined node would wait out a session
timeout for its own earlier registration), and commits a RegisterBrokerRecord, fenced: the broker epoch in the answer
is the record's offset, and the broker is unfenced once its heartbeats show it replayed that far.
v3–v4 (previous_broker_epoch, for KIP-966's eligible leader replicas) are not advertised.
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.controller.operations import BrokerRegistrationReply, ControllerResult, Endpoint
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages.broker_registration import BrokerRegistrationRequest, BrokerRegistrationResponse

API_KEY = 62


async def handle(context: QuorumContext, request: BrokerRegistrationRequest) -> BrokerRegistrationResponse:
    server = context.quorum
    broker_id = request.broker_id
    if request.cluster_id != server.image.cluster_id:
        return BrokerRegistrationResponse(error_code=ErrorCode.INCONSISTENT_CLUSTER_ID)
    endpoints = [Endpoint(listener.name, listener.host, listener.port, listener.security_protocol)
                 for listener in request.listeners]
    supported = {f.name: (f.min_supported_version, f.max_supported_version) for f in request.features}

    def register() -> ControllerResult[BrokerRegistrationReply]:
        existing = server.image.brokers.get(broker_id)
        if existing is not None and existing.incarnation_id != request.incarnation_id \
                and not existing.fenced and server.heartbeats.heard_within_session(broker_id, context.now_ms):
            return ControllerResult(BrokerRegistrationReply(
                ErrorCode.DUPLICATE_BROKER_REGISTRATION,
                f"broker {broker_id} is registered by another live process (incarnation {existing.incarnation_id})"))
        return server.controller.register_broker(broker_id, endpoints, request.rack or None, request.incarnation_id,
                                                 list(request.log_dirs or ()), unfence=False,
                                                 next_offset=server.next_offset,
                                                 supported_features=supported)

    try:
        reply = await server.submit(register)
    except KafkaError as error:
        return BrokerRegistrationResponse(error_code=error.code)
    if reply.error == ErrorCode.NONE:
        server.heartbeats.registered(broker_id, context.now_ms)
    return BrokerRegistrationResponse(error_code=reply.error, broker_epoch=reply.broker_epoch)


HANDLERS = [Handler(API_KEY, 0, 2, handle)]
