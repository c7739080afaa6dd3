"""ListTransactions (key 66), v0–v1: the transactions this broker coordinates, filtered by state
names, producer ids and (v1) how long they have been running."""

from __future__ import annotations

from gregor.broker.handlers import BrokerContext, Handler
from gregor.metadata.acls import AclOperation, ResourceType
from gregor.protocol.messages import ListTransactionsRequest, ListTransactionsResponse

API_KEY = 66
_State = ListTransactionsResponse.TransactionState


def handle(context: BrokerContext, request: ListTransactionsRequest) -> ListTransactionsResponse:
    result = context.transactions.coordinator.list_transactions(
        states=request.state_filters, producer_ids=request.producer_id_filters,
        duration_ms=request.duration_filter if context.version >= 1 else -1, now_ms=context.now_ms)
    described = context.allowed_names(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                      {t.transactional_id for t in result.transactions})
    return ListTransactionsResponse(
        throttle_time_ms=0, error_code=result.error, unknown_state_filters=list(result.unknown_state_filters),
        transaction_states=[_State(transactional_id=t.transactional_id, producer_id=t.producer_id,
                                   transaction_state=t.state) for t in result.transactions
                            if t.transactional_id in described])


HANDLERS = [Handler(API_KEY, 0, 1, handle)]
