"""What a broker asks of the active controller: the `ControllerGateway` service.

Its own requests (CreateTopics for auto-creation and `__consumer_offsets`, AllocateProducerIds for
blocks of producer ids) and the admin requests clients make of it, which handlers forward as they
came. Everything goes through the broker's ControllerChannel, set when the broker joins its
cluster (over sockets, or in process on the embedded single node); before that, requests are
answered NOT_CONTROLLER.
"""

from __future__ import annotations

import logging
from typing import Iterator, Sequence

from gregor.broker.controller_channel import ControllerChannel, answer_as
from gregor.broker.services import MetadataView
from gregor.controller.operations import CreatableTopic, CreateTopicResult
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.exceptions import KafkaError
from gregor.protocol.messages import CreateTopicsRequest, CreateTopicsResponse, Message
from gregor.protocol.messages.allocate_producer_ids import AllocateProducerIdsRequest, AllocateProducerIdsResponse

log = logging.getLogger("gregor.broker")

CONTROLLER_REQUEST_S = 30.0
CREATE_TOPICS_VERSION = 7
ALLOCATE_PRODUCER_IDS_VERSION = 0


class ControllerClient:
    def __init__(self, metadata: MetadataView) -> None:
        self._metadata = metadata
        self.channel: ControllerChannel | None = None
        self._producer_ids: Iterator[int] = iter(())

    async def send_to_controller(self, request: Message, version: int, timeout_s: float) -> Message:
        """A request to the active controller: this broker's own or a client's, forwarded as it came."""
        if self.channel is None:
            raise KafkaError(ErrorCode.NOT_CONTROLLER, "the broker has not joined its cluster yet")
        response: Message = await self.channel.send(request, version, timeout_s)
        return response

    async def create_topics(self, topics: list[CreatableTopic]) -> list[CreateTopicResult]:
        """Have the active controller create topics the broker needs (auto-creation, __consumer_offsets)."""
        request = CreateTopicsRequest(timeout_ms=int(CONTROLLER_REQUEST_S * 1000), topics=[
            CreateTopicsRequest.CreatableTopic(
                name=topic.name, num_partitions=topic.num_partitions, replication_factor=topic.replication_factor,
                configs=[CreateTopicsRequest.CreatableTopicConfig(name=k, value=v) for k, v in topic.configs.items()])
            for topic in topics])
        try:
            response = answer_as(CreateTopicsResponse, await self.send_to_controller(
                request, CREATE_TOPICS_VERSION, CONTROLLER_REQUEST_S))
        except KafkaError as error:
            return [CreateTopicResult(topic.name, ErrorCode(error.code), str(error)) for topic in topics]
        return [CreateTopicResult(result.name, ErrorCode(result.error_code), result.error_message,
                                  num_partitions=result.num_partitions) for result in response.topics]

    async def auto_create_topics(self, names: Sequence[str]) -> None:
        """Create unknown topics with the broker defaults, as `auto.create.topics.enable` asks."""
        wanted = [CreatableTopic(name) for name in dict.fromkeys(names)
                  if self._metadata.is_valid_topic_name(name) and name not in self._metadata.image.topics]
        if not wanted:
            return
        for result in await self.create_topics(wanted):
            if result.error == ErrorCode.TOPIC_ALREADY_EXISTS:
                continue
            if result.error:
                log.warning("auto-creating topic %s failed: %s", result.name, result.message)
            else:
                log.info("auto-created topic %s with %d partition(s)", result.name, result.num_partitions)

    async def next_producer_id(self) -> int:
        """A fresh producer id from this broker's block, allocating a new block when it runs out."""
        producer_id = next(self._producer_ids, None)
        if producer_id is None:
            response = answer_as(AllocateProducerIdsResponse, await self.send_to_controller(
                AllocateProducerIdsRequest(broker_id=self._metadata.node_id, broker_epoch=self._metadata.broker_epoch),
                ALLOCATE_PRODUCER_IDS_VERSION, CONTROLLER_REQUEST_S))
            if response.error_code:
                raise KafkaError(response.error_code, "the controller allocated no producer ids")
            first, size = response.producer_id_start, response.producer_id_len
            self._producer_ids = iter(range(first, first + size))
            producer_id = next(self._producer_ids)
        return producer_id
