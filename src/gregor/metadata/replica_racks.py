"""The racks a topic's partitions have replicas on, as rack-aware consumer assignors read them."""

from __future__ import annotations

from typing import Mapping

from gregor.metadata.image import MetadataImage, PartitionRegistration


def replica_racks(image: MetadataImage, partitions: Mapping[int, PartitionRegistration]) -> tuple[frozenset[str], ...]:
    """Per partition index, the `broker.rack` of its replicas' brokers; () when none has a rack."""
    racks = []
    for index in range(len(partitions)):
        registration = partitions.get(index)
        replicas = registration.replicas if registration is not None else ()
        brokers = [image.brokers.get(broker) for broker in replicas]
        racks.append(frozenset(broker.rack for broker in brokers if broker is not None and broker.rack))
    return tuple(racks) if any(racks) else ()
