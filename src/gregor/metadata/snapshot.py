"""A metadata image as the records that rebuild it (Kafka's `MetadataImage.write`), so that the
`__cluster_metadata` log prefix an image covers can be replaced by a snapshot.

Replaying `image_records(image)` onto an empty image gives back `image` (the round trip is
tested). The order is the one replay needs: features, brokers, then each topic before its
partitions, configs, ACLs, client quotas, the producer-id high mark, SCRAM credentials.
"""

from __future__ import annotations

from typing import Any

from gregor.metadata.image import MetadataImage
from gregor.protocol.messages import (
    AccessControlEntryRecord, ClientQuotaRecord, ConfigRecord, FeatureLevelRecord, PartitionRecord, ProducerIdsRecord, RegisterBrokerRecord, TopicRecord,
    UserScramCredentialRecord,
)


def image_records(image: MetadataImage) -> list[Any]:
    records: list[Any] = [FeatureLevelRecord(name=name, feature_level=level)
                          for name, level in sorted(image.features.items())]
    for broker_id, broker in sorted(image.brokers.items()):
        records.append(RegisterBrokerRecord(
            broker_id=broker_id, incarnation_id=broker.incarnation_id, broker_epoch=broker.epoch,
            end_points=[RegisterBrokerRecord.BrokerEndpoint(name=e.listener, host=e.host, port=e.port,
                                                            security_protocol=e.security_protocol)
                        for e in broker.endpoints],
            rack=broker.rack, fenced=broker.fenced, in_controlled_shutdown=broker.in_controlled_shutdown,
            log_dirs=list(broker.log_dirs),
            features=[RegisterBrokerRecord.BrokerFeature(name=name, min_supported_version=low,
                                                         max_supported_version=high)
                      for name, (low, high) in sorted(broker.supported_features.items())]))
    for name, topic in sorted(image.topics.items()):
        records.append(TopicRecord(name=name, topic_id=topic.topic_id))
        for index, partition in sorted(topic.partitions.items()):
            records.append(PartitionRecord(
                partition_id=index, topic_id=topic.topic_id, replicas=list(partition.replicas),
                isr=list(partition.isr), removing_replicas=list(partition.removing_replicas),
                adding_replicas=list(partition.adding_replicas), leader=partition.leader,
                leader_recovery_state=partition.leader_recovery_state, leader_epoch=partition.leader_epoch,
                partition_epoch=partition.partition_epoch, directories=list(partition.directories)))
    for (resource_type, resource_name), values in sorted(image.configs.items()):
        records.extend(ConfigRecord(resource_type=resource_type, resource_name=resource_name, name=key, value=value)
                       for key, value in sorted(values.items()))
    for acl_id, acl in sorted(image.acls.items()):
        records.append(AccessControlEntryRecord(
            id=acl_id, resource_type=acl.resource_type, resource_name=acl.resource_name,
            pattern_type=acl.pattern_type, principal=acl.principal, host=acl.host, operation=acl.operation,
            permission_type=acl.permission))
    for entity, quota_values in sorted(image.client_quotas.items(), key=lambda item: repr(item[0])):
        components = [ClientQuotaRecord.EntityData(entity_type=kind, entity_name=name) for kind, name in entity]
        records.extend(ClientQuotaRecord(entity=components, key=key, value=value, remove=False)
                       for key, value in sorted(quota_values.items()))
    if image.next_producer_id:
        records.append(ProducerIdsRecord(broker_id=-1, broker_epoch=-1, next_producer_id=image.next_producer_id))
    records.extend(UserScramCredentialRecord(name=name, mechanism=mechanism, salt=credential.salt,
                                             stored_key=credential.stored_key, server_key=credential.server_key,
                                             iterations=credential.iterations)
                   for (name, mechanism), credential in sorted(image.scram_credentials.items()))
    return records
