"""DescribeTransactions (key 65), v0: state, producer, timeout, start and partitions of the
transactions this broker coordinates; NOT_COORDINATOR for ids coordinated elsewhere,
TRANSACTIONAL_ID_NOT_FOUND for ids nobody uses."""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import DescribeTransactionsRequest, DescribeTransactionsResponse

API_KEY = 65
_State = DescribeTransactionsResponse.TransactionState
_Topic = DescribeTransactionsResponse.TopicData


def handle(context: BrokerContext, request: DescribeTransactionsRequest) -> DescribeTransactionsResponse:
    states = []
    described = context.allowed_names(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                      set(request.transactional_ids))
    for found in context.transactions.coordinator.describe(request.transactional_ids):
        if found.transactional_id not in described:
            states.append(_State(error_code=ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                                 transactional_id=found.transactional_id, transaction_state="",
                                 transaction_timeout_ms=0, transaction_start_time_ms=-1, producer_id=-1,
                                 producer_epoch=-1, topics=[]))
            continue
        visible = context.allowed_names(AclOperation.DESCRIBE, ResourceType.TOPIC, {t for t, _ in found.partitions})
        topics: dict[str, list[int]] = {}
        for topic, index in found.partitions:
            if topic in visible:
                topics.setdefault(topic, []).append(index)
        states.append(_State(error_code=found.error, transactional_id=found.transactional_id,
                             transaction_state=found.state, transaction_timeout_ms=found.timeout_ms,
                             transaction_start_time_ms=found.start_ms, producer_id=found.producer_id,
                             producer_epoch=found.producer_epoch,
                             topics=[_Topic(topic=name, partitions=indexes) for name, indexes in topics.items()]))
    return DescribeTransactionsResponse(throttle_time_ms=0, transaction_states=states)


HANDLERS = [Handler(API_KEY, 0, 0, handle)]
