"""AlterPartition (key 56), v2, on the controller listener: partition leaders propose ISR
changes (seed 002: followers that fell behind leave the ISR, caught-up ones rejoin).

Each proposal is checked against the partition's current leader, leader epoch and partition
epoch and the live brokers (`gregor.controller.replication_control.alter_partition`); accepted
ones are committed together and answered with the committed state, so the leader adopts the new
partition epoch. An ISR that brings every target replica of a partition reassignment in sync
completes the reassignment (KIP-455); when that moves the leadership to another broker the change
is committed and the proposer answered NEW_LEADER_ELECTED, as Kafka does. v0–v1 (topic names)
and v3 (broker epochs per ISR member) are not advertised.
"""

from __future__ import annotations

from gregor.broker.handlers import Handler, QuorumContext
from gregor.controller.operations import ControllerResult
from gregor.controller.replication_control import alter_partition
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages.alter_partition import AlterPartitionRequest, AlterPartitionResponse

API_KEY = 56
Result = AlterPartitionResponse.PartitionData


async def handle(context: QuorumContext, request: AlterPartitionRequest) -> AlterPartitionResponse:
    server = context.quorum

    def decide() -> ControllerResult:
        image = server.image
        broker = image.brokers.get(request.broker_id)
        if broker is None or broker.epoch != request.broker_epoch:
            return ControllerResult(ErrorCode.STALE_BROKER_EPOCH)
        answers, records = [], []
        for topic in request.topics:
            for partition in topic.partitions:
                error, record = alter_partition(image, request.broker_id, topic.topic_id, partition.partition_index,
                                                partition.leader_epoch, partition.partition_epoch,
                                                list(partition.new_isr))
                answers.append((topic.topic_id, partition.partition_index, error))
                if record is not None:
                    records.append(record)
        return ControllerResult(answers, tuple(records))

    try:
        outcome = await server.submit(decide)
    except KafkaError as error:
        return AlterPartitionResponse(error_code=error.code)
    if isinstance(outcome, ErrorCode):
        return AlterPartitionResponse(error_code=outcome)
    image = server.image
    by_topic: dict = {}
    for topic_id, index, code in outcome:
        answer = Result(partition_index=index, error_code=code)
        topic = image.topics_by_id.get(topic_id)
        registration = topic.partitions.get(index) if topic is not None else None
        if code == ErrorCode.NONE and registration is not None:
            answer.leader_id, answer.leader_epoch = registration.leader, registration.leader_epoch
            answer.isr, answer.partition_epoch = list(registration.isr), registration.partition_epoch
        by_topic.setdefault(topic_id, []).append(answer)
    return AlterPartitionResponse(topics=[AlterPartitionResponse.TopicData(topic_id=topic_id, partitions=answers)
                                          for topic_id, answers in by_topic.items()])


HANDLERS = [Handler(API_KEY, 2, 2, handle)]
