"""The cluster as this broker last saw it committed: the `MetadataView` service.

It holds the current metadata image (the metadata publisher replaces it with each committed one)
and answers what handlers and components ask of it: topic names by id, the brokers' endpoints on
a listener, where followers reach a leader, a topic's configuration. Its broker epoch is the one
the broker lifecycle registered with, -1 before.
"""

from __future__ import annotations

import uuid
from typing import Iterable

from gregor.broker.broker_lifecycle import BrokerLifecycle
from gregor.broker.config import BrokerConfig
from gregor.broker.services import AdvertisedEndpoint, MetadataView
from gregor.controller.topic_names import topic_name_error
from gregor.metadata.image import MetadataImage
from gregor.metadata.topic_configs import ConfigEntry, describe_topic_config, effective_topic_config
from gregor.storage.log_config import LogConfig


class BrokerMetadata:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        self.node_id = config.node_id
        self.controller_id = config.node_id
        self.image = MetadataImage()
        self.lifecycle: BrokerLifecycle | None = None  # set when the broker joins its cluster

    @property
    def broker_epoch(self) -> int:
        """This broker's registration epoch."""
        return self.lifecycle.broker_epoch if self.lifecycle is not None else -1

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        topic = self.image.topics_by_id.get(topic_id)
        return topic.name if topic else None

    @staticmethod
    def is_valid_topic_name(name: str) -> bool:
        return topic_name_error(name) is None

    def endpoints_for(self, listener: str) -> Iterable[tuple[int, AdvertisedEndpoint]]:
        for broker_id, registration in sorted(self.image.brokers.items()):
            if registration.fenced:
                continue
            endpoint = registration.endpoint(listener)
            if endpoint is not None:
                yield broker_id, AdvertisedEndpoint(endpoint.host, endpoint.port, registration.rack)

    def replica_endpoint(self, broker_id: int) -> tuple[str, int] | None:
        """Where followers reach broker `broker_id`: its registered inter-broker listener."""
        registration = self.image.brokers.get(broker_id)
        endpoint = registration.endpoint(self.config.inter_broker_listener) if registration else None
        return (endpoint.host, endpoint.port) if endpoint else None

    def topic_config_entries(self, topic: str) -> list[ConfigEntry]:
        """The DescribeConfigs rows of a topic: every key with its value, source and synonyms."""
        return describe_topic_config(self.image.topic_config(topic), self.config.originals,
                                     self.image.broker_config(self.node_id), self.image.broker_config(""))


def log_config(metadata: MetadataView, topic: str | None) -> LogConfig:
    """The settings of a topic's partition logs (None: the broker defaults) in the committed
    image: the topic's overrides over the dynamic broker configs over the broker's own keys."""
    image, config = metadata.image, metadata.config
    overrides = image.topic_config(topic) if topic else {}
    values = effective_topic_config(overrides, config.originals, image.broker_config(metadata.node_id),
                                    image.broker_config(""))
    base = LogConfig(producer_id_expiration_ms=config.get("producer.id.expiration.ms"))
    return LogConfig.from_properties(values, base)
