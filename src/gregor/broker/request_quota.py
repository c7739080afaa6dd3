"""The request-time quota (`request_percentage`, Kafka's ClientRequestQuotaManager) as the client
listener's dispatcher applies it after each handler: the time the handler ran counts against the
client's share of the event loop, and a client over it is throttled like one over a byte rate,
with `throttle_time_ms` in the answer (the larger of this and a byte-rate throttle) and its
connection muted. A follower's fetch is exempt, as Kafka exempts broker traffic.

An answer that is still to come (a parked fetch, an acks=all produce) cannot carry the throttle
time any more: the connection is muted all the same, and the client learns the time from its next
answer's throttle. An acks=all append runs after the handler, at the end of the connection's step
(`GatheredAppends`): each request is charged its share of that append's time then, which counts
towards the client's next throttle.
"""

from __future__ import annotations

from typing import Any

from gregor.broker.handlers import BrokerContext
from gregor.broker.handlers.replica_fetch import replica_id_of
from gregor.broker.network import Throttled
from gregor.protocol.messages import FetchRequest, Message


def _exempt(context: BrokerContext, request: Any) -> bool:
    return isinstance(request, FetchRequest) and replica_id_of(request, context.version) >= 0


def apply_request_quota(context: BrokerContext, request: Any, result: object, seconds: float) -> object:
    quotas = context.quotas
    if not quotas.enabled or _exempt(context, request):
        return result
    throttle_ms = quotas.record_request_time(context.connection.principal, context.header.client_id, seconds,
                                             context.now_ms)
    if not throttle_ms:
        return result
    answer, delay_ms = (result.answer, result.delay_ms) if isinstance(result, Throttled) else (result, 0)
    if isinstance(answer, Message) and hasattr(answer, "throttle_time_ms"):
        answer.throttle_time_ms = max(answer.throttle_time_ms, throttle_ms)
    return Throttled(answer, max(delay_ms, throttle_ms))
