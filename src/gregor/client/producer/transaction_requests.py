"""The transactional producer's requests (network loop side): InitProducerId with the
transactional id, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn.

Each goes to its coordinator (FindCoordinator TRANSACTION for the transactional id, GROUP for
TxnOffsetCommit), is asked again after `retry.backoff.ms` on a retriable answer (or after finding
the coordinator again when it moved) until the call's deadline, and otherwise reports the error
to the `TransactionManager`, which decides whether it is abortable or fatal.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any, Callable, Mapping

from gregor.client.errors import (
    ClientErrorCode, KafkaConnectionError, KafkaException, KafkaTimeoutError,
)
from gregor.client.group_metadata import ConsumerGroupMetadata
from gregor.client.network import NetworkClient, TopicPartition
from gregor.client.network.coordinators import CoordinatorType, Coordinators
from gregor.client.producer.idempotence import ProducerIdentity
from gregor.client.producer.transaction_manager import Outcome, TransactionManager, classify
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import (
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, EndTxnRequest, InitProducerIdRequest,
    TxnOffsetCommitRequest,
)

log = logging.getLogger(__name__)

# v5 of InitProducerId/EndTxn and AddPartitionsToTxn v4+ are transaction protocol v2 (KIP-890
# part 2) or broker-to-broker; this client speaks the classic protocol, with KIP-360 epoch bumps.
INIT_PRODUCER_ID_VERSIONS = (0, 4)
ADD_PARTITIONS_VERSIONS = (0, 3)
ADD_OFFSETS_VERSIONS = (0, 4)
TXN_OFFSET_COMMIT_VERSIONS = (0, 4)
END_TXN_VERSIONS = (0, 4)


class TransactionRequests:
    def __init__(self, network: NetworkClient, manager: TransactionManager, identity: ProducerIdentity,
                 transaction_timeout_ms: int, request_timeout_ms: int) -> None:
        self.network = network
        self.manager = manager
        self.identity = identity
        self.coordinators = Coordinators(network)
        self.transaction_timeout_ms = transaction_timeout_ms
        self.request_timeout_ms = request_timeout_ms

    @property
    def _transactional_id(self) -> str:
        return self.manager.transactional_id

    # -- the API's requests --

    async def init_producer_id(self, deadline: float) -> None:
        """A producer id and epoch for the transactional id; the coordinator aborts (or completes)
        a transaction the previous instance left open and fences it. As an abort's epoch bump
        (KIP-360) it also carries the current id and epoch."""
        bump = self.manager.epoch_bump_required and self.identity.known

        def build() -> InitProducerIdRequest:
            return InitProducerIdRequest(
                transactional_id=self._transactional_id, transaction_timeout_ms=self.transaction_timeout_ms,
                producer_id=self.identity.producer_id if bump else -1,
                producer_epoch=self.identity.producer_epoch if bump else -1)
        response = await self._call(build, INIT_PRODUCER_ID_VERSIONS, deadline, "InitProducerId",
                                    lambda response: response.error_code)
        self.identity.set(response.producer_id, response.producer_epoch)
        log.info("transactional producer %r has producer id %d epoch %d", self._transactional_id,
                 response.producer_id, response.producer_epoch)

    async def add_offsets(self, group_id: str, deadline: float) -> None:
        await self._call(lambda: AddOffsetsToTxnRequest(
            transactional_id=self._transactional_id, producer_id=self.identity.producer_id,
            producer_epoch=self.identity.producer_epoch, group_id=group_id),
            ADD_OFFSETS_VERSIONS, deadline, "AddOffsetsToTxn", lambda response: response.error_code)
        self.manager.offsets_added()

    async def txn_offset_commit(self, offsets: Mapping[TopicPartition, tuple[int, int | None, str]],
                                group: ConsumerGroupMetadata, deadline: float) -> None:
        by_topic: dict[str, list[TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition]] = {}
        for partition, (offset, epoch, metadata) in sorted(offsets.items()):
            by_topic.setdefault(partition.topic, []).append(TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition(
                partition_index=partition.partition, committed_offset=offset,
                committed_leader_epoch=-1 if epoch is None else epoch, committed_metadata=metadata))

        def build() -> TxnOffsetCommitRequest:
            return TxnOffsetCommitRequest(
                transactional_id=self._transactional_id, group_id=group.group_id,
                producer_id=self.identity.producer_id, producer_epoch=self.identity.producer_epoch,
                generation_id=group.generation_id, member_id=group.member_id,
                group_instance_id=group.group_instance_id,
                topics=[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic(name=topic, partitions=partitions)
                        for topic, partitions in by_topic.items()])
        await self._call(build, TXN_OFFSET_COMMIT_VERSIONS, deadline, "TxnOffsetCommit", _worst_partition_error,
                         key=group.group_id, key_type=CoordinatorType.GROUP)

    async def end_txn(self, commit: bool, deadline: float) -> None:
        await self._call(lambda: EndTxnRequest(
            transactional_id=self._transactional_id, producer_id=self.identity.producer_id,
            producer_epoch=self.identity.producer_epoch, committed=commit),
            END_TXN_VERSIONS, deadline, "EndTxn", lambda response: response.error_code)

    # -- the sender's request --

    async def add_partitions(self, partitions: list[TopicPartition]) -> float:
        """AddPartitionsToTxn for partitions about to get their first batch; returns how long the
        sender should wait before asking again (0 when they joined or the transaction failed)."""
        by_topic: dict[str, list[int]] = {}
        for partition in partitions:
            by_topic.setdefault(partition.topic, []).append(partition.partition)
        request = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=self._transactional_id,
            v3_and_below_producer_id=self.identity.producer_id,
            v3_and_below_producer_epoch=self.identity.producer_epoch,
            v3_and_below_topics=[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic(name=topic, partitions=indexes)
                                 for topic, indexes in by_topic.items()])
        backoff = self.network.settings.retry_backoff_ms / 1000
        try:
            node = await self.coordinators.find(self._transactional_id, CoordinatorType.TRANSACTION,
                                                timeout_ms=self.request_timeout_ms)
            response = await self.network.send(request, node, versions=ADD_PARTITIONS_VERSIONS,
                                               timeout_ms=self.request_timeout_ms)
        except KafkaException as error:
            if error.code == ClientErrorCode._DESTROY:
                raise
            if error.code > 0 and classify(error.code) in (Outcome.FATAL, Outcome.FENCED) and not error.retriable:
                self.manager.fail(error.code, f"AddPartitionsToTxn: {error.error.message}", classify(error.code))
                return 0.0
            self._maybe_moved(error)
            log.debug("AddPartitionsToTxn failed, will retry: %s", error)
            return backoff
        codes: dict[int, list[TopicPartition]] = {}
        for topic in response.results_by_topic_v3_and_below:
            for result in topic.results_by_partition:
                codes.setdefault(result.partition_error_code, []).append(
                    TopicPartition(topic.name, result.partition_index))
        if response.error_code:
            codes.setdefault(response.error_code, list(partitions))
        failed = {code: found for code, found in codes.items() if code != ErrorCode.NONE}
        if not failed:
            self.manager.partitions_added(codes.get(ErrorCode.NONE, partitions))
            return 0.0
        outcomes = {code: classify(code) for code in failed}
        worst = max(failed, key=lambda code: _SEVERITY[outcomes[code]])
        outcome = outcomes[worst]
        if outcome is Outcome.COORDINATOR_MOVED:
            self.coordinators.invalidate(self._transactional_id, CoordinatorType.TRANSACTION)
            return 0.0
        if outcome is Outcome.RETRY:
            return backoff
        where = ", ".join(f"{item.topic}-{item.partition}" for item in failed[worst])
        self.manager.fail(worst, f"AddPartitionsToTxn for {where}", outcome)
        return 0.0

    # -- the retry loop --

    async def _call(self, build: Callable[[], Any], versions: tuple[int, int], deadline: float, name: str,
                    error_of: Callable[[Any], int], *, key: str | None = None,
                    key_type: CoordinatorType = CoordinatorType.TRANSACTION) -> Any:
        key = self._transactional_id if key is None else key
        backoff = self.network.settings.retry_backoff_ms / 1000
        last: str = "no answer yet"
        while True:
            remaining_ms = (deadline - time.monotonic()) * 1000
            if remaining_ms <= 0:
                raise KafkaTimeoutError(ClientErrorCode._TIMED_OUT, f"{name} for transactional id "
                                        f"{self._transactional_id!r} did not complete in time ({last})")
            try:
                node = await self.coordinators.find(key, key_type, timeout_ms=min(remaining_ms,
                                                                                  self.request_timeout_ms))
                response = await self.network.send(build(), node, versions=versions,
                                                   timeout_ms=min(remaining_ms, self.request_timeout_ms))
            except KafkaException as error:
                if error.code == ClientErrorCode._DESTROY or not (
                        error.retriable or classify(error.code) in (Outcome.RETRY, Outcome.COORDINATOR_MOVED)):
                    raise
                self._maybe_moved(error, key, key_type)
                last = str(error)
                await asyncio.sleep(min(backoff, max(deadline - time.monotonic(), 0)))
                continue
            code = error_of(response)
            if code == ErrorCode.NONE:
                return response
            outcome = classify(code)
            last = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
            if outcome is Outcome.COORDINATOR_MOVED:
                self.coordinators.invalidate(key, key_type)
                continue
            if outcome is Outcome.RETRY:
                await asyncio.sleep(min(backoff, max(deadline - time.monotonic(), 0)))
                continue
            raise self.manager.fail(code, f"{name} for transactional id {self._transactional_id!r}", outcome)

    def _maybe_moved(self, error: KafkaException, key: str | None = None,
                     key_type: CoordinatorType = CoordinatorType.TRANSACTION) -> None:
        if isinstance(error, KafkaConnectionError) or classify(error.code) is Outcome.COORDINATOR_MOVED:
            self.coordinators.invalidate(self._transactional_id if key is None else key, key_type)


_SEVERITY = {Outcome.COORDINATOR_MOVED: 0, Outcome.RETRY: 1, Outcome.ABORTABLE: 2, Outcome.ABORTABLE_BUMP: 3,
             Outcome.FATAL: 4, Outcome.FENCED: 5}


def _worst_partition_error(response: Any) -> int:
    codes = {partition.error_code for topic in response.topics for partition in topic.partitions}
    codes.discard(ErrorCode.NONE)
    if not codes:
        return ErrorCode.NONE
    return max(codes, key=lambda code: _SEVERITY[classify(code)])
