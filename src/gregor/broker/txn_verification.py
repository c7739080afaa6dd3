"""KIP-890 part 1 on the produce path: before a transaction's first write to a partition is
appended, the partition leader asks the transaction coordinator whether that partition is in the
producer's ongoing transaction (AddPartitionsToTxn v4 with verifyOnly; a direct call when this
broker is the coordinator). Without it a produce request that arrives after its producer gave up
on it opens a transaction nobody will close (a hanging transaction, which holds back the last
stable offset for ever) or joins the producer's next transaction; `tests/sim/transactions` shows
both. Kafka's `transaction.partition.verification.enable` turns it off.

The coordinator's answers become produce errors as Kafka maps them: INVALID_TXN_STATE (the
partition is not in the transaction), NOT_ENOUGH_REPLICAS (retriable: the coordinator is busy,
loading or elsewhere), INVALID_PRODUCER_EPOCH (a fenced producer).
"""

from __future__ import annotations

from typing import Iterable

from gregor.broker.handlers import BrokerContext
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ProduceRequest
from gregor.records.batch import parse_header
from gregor.records.convert import detect_magic

TopicPartition = tuple[str, int]

_PRODUCE_ERRORS = {
    ErrorCode.CONCURRENT_TRANSACTIONS: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_COORDINATOR: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NETWORK_EXCEPTION: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
}


def produce_error(error: ErrorCode) -> ErrorCode:
    """A verification answer as the producer's partition error."""
    return _PRODUCE_ERRORS.get(error, error)


def adds_partitions(context: BrokerContext, request: ProduceRequest) -> bool:
    """Transaction protocol v2 (KIP-890 part 2): a Produce v12+ transactional write adds its
    partition to the transaction itself, once the cluster's `transaction.version` is 2. Below
    that level the client must have added it (AddPartitionsToTxn), as before."""
    return (request.transactional_id is not None and context.version >= 12
            and context.transactions.transaction_version >= 2)


def needing_verification(context: BrokerContext, request: ProduceRequest, adding: bool = False
                         ) -> tuple[int, int, list[TopicPartition]] | None:
    """(producer id, epoch, partitions) whose transactional writes would open a transaction on a
    partition this broker leads; None when nothing needs asking. A partition where the producer's
    transaction is already open in the same epoch was verified (or added) by its first write.
    `adding` writes are asked about whatever `transaction.partition.verification.enable` says."""
    if request.transactional_id is None or not (adding or context.metadata.config.get(
            "transaction.partition.verification.enable")):
        return None
    producer: tuple[int, int] | None = None
    wanted: list[TopicPartition] = []
    for topic in request.topic_data:
        for data in topic.partition_data:
            partition = context.partitions.partition(topic.name, data.index)
            records = data.records
            if partition is None or not isinstance(records, (bytes, bytearray, memoryview)) or not records:
                continue
            try:
                view = memoryview(records)
                if detect_magic(view) < 2:
                    continue
                header = parse_header(view)
            except Exception:  # noqa: BLE001 - malformed records get their error from the append
                continue
            if not header.is_transactional or header.is_control:
                continue
            producer = producer or (header.producer_id, header.producer_epoch)
            if not partition.in_transaction(header.producer_id, header.producer_epoch):
                wanted.append((topic.name, data.index))
    return None if producer is None or not wanted else (*producer, wanted)


async def verify(context: BrokerContext, transactional_id: str, producer_id: int, producer_epoch: int,
                 partitions: Iterable[TopicPartition], add: bool = False) -> dict[TopicPartition, ErrorCode]:
    """Each partition's produce error (NONE: in the transaction, or added to it when `add`) from
    the coordinator's answer."""
    answers = await context.transactions.verify(transactional_id, producer_id, producer_epoch, list(partitions),
                                                add)
    return {partition: produce_error(error) for partition, error in answers.items()}
