"""Protocol versions newer than the pinned spec commit, stated as edits to its specs.

The specs in `../shared/kafka-protocol/` are Apache Kafka 4.0.0-SNAPSHOT, where the share-group
APIs (KIP-932) exist only as the early-access version 0. Apache Kafka 4.1 made version 1 the
first stable one, and that is the version real share consumers (librdkafka 2.12+, the Java
client 4.1+) speak. Each entry below names a spec and says what version 1 changes; the generator
applies it to the parsed JSON before generating, and marks the generated module as patched.

- ShareGroupHeartbeat, ShareGroupDescribe, ShareAcknowledge: version 1 is version 0 on the wire
  (the bump marks the stable API and its error set).
- ShareFetchRequest v1: `MaxRecords` and `BatchSize` (int32) follow `MaxBytes`;
  `PartitionMaxBytes` is version 0 only.
- ShareFetchResponse v1: `AcquisitionLockTimeoutMs` (int32) follows the top-level `ErrorMessage`.

Apache Kafka 4.0.0 also added a version that is the previous one on the wire and tells the broker
the client speaks transaction protocol v2 (KIP-890 part 2), which the pinned snapshot lacks:

- Produce v12: a transactional write also adds its partition to the transaction (AddPartitionsToTxn's work).
- TxnOffsetCommit v5: the commit also adds the group's offsets partition (AddOffsetsToTxn's work).

Apache Kafka 4.1 names Produce's topics by id (KIP-516):

- Produce v13: each request and response topic carries `TopicId` (uuid) instead of `Name`
  (versions 0-12); an id the broker does not know is UNKNOWN_TOPIC_ID.

Apache Kafka 4.1 renamed ListClientMetricsResources (74) to ListConfigResources (KIP-1142):

- ListConfigResourcesRequest v1: `ResourceTypes` ([]int8), the config resource types to list
  (empty: every type the broker supports).
- ListConfigResourcesResponse: `ClientMetricsResources` is `ConfigResources`, its `Name`
  `ResourceName`; v1 adds each resource's `ResourceType` (int8, default 16: client metrics).

APIs the pinned specs lack entirely are stated whole in `ADDED` (family "clients"), as Apache
Kafka 4.1 defines them (KIP-932's admin APIs, version 0, flexible):

- DescribeShareGroupOffsets (90): per group, per topic (null: every topic with state), per
  partition the share-partition start offset, leader epoch and error.
- AlterShareGroupOffsets (91): new start offsets of an empty group; a top-level error, then
  per topic and partition.
- DeleteShareGroupOffsets (92): forget an empty group's state on whole topics; a top-level error,
  then one error per topic.
"""

from __future__ import annotations

from typing import Any

_V1_SAME = ("ShareGroupHeartbeatRequest", "ShareGroupHeartbeatResponse", "ShareGroupDescribeRequest",
            "ShareGroupDescribeResponse", "ShareAcknowledgeRequest", "ShareAcknowledgeResponse")


def _int32(name: str, versions: str, about: str) -> dict[str, Any]:
    return {"name": name, "type": "int32", "versions": versions, "about": about}


def _insert_after(fields: list[dict[str, Any]], after: str, new: list[dict[str, Any]]) -> None:
    index = next(i for i, f in enumerate(fields) if f["name"] == after)
    fields[index + 1:index + 1] = new


def _share_fetch_request(spec: dict[str, Any]) -> None:
    _insert_after(spec["fields"], "MaxBytes", [
        _int32("MaxRecords", "1+", "The maximum number of records to fetch."),
        _int32("BatchSize", "1+", "The preferred number of records per acquired batch."),
    ])
    topics = next(f for f in spec["fields"] if f["name"] == "Topics")
    partitions = next(f for f in topics["fields"] if f["name"] == "Partitions")
    next(f for f in partitions["fields"] if f["name"] == "PartitionMaxBytes")["versions"] = "0"


def _share_fetch_response(spec: dict[str, Any]) -> None:
    _insert_after(spec["fields"], "ErrorMessage", [
        _int32("AcquisitionLockTimeoutMs", "1+", "How long the acquired records stay locked."),
    ])


_EDITS = {"ShareFetchRequest": _share_fetch_request, "ShareFetchResponse": _share_fetch_response}


_TRANSACTION_V2_VERSIONS = {"ProduceRequest": "0-13", "ProduceResponse": "0-13", "TxnOffsetCommitRequest": "0-5",
                            "TxnOffsetCommitResponse": "0-5"}


def _produce_topic_ids(spec: dict[str, Any]) -> None:
    topics = next(f for f in spec["fields"] if f["name"] in ("TopicData", "Responses"))
    name = next(f for f in topics["fields"] if f["name"] == "Name")
    name.update(versions="0-12", ignorable=True)
    _insert_after(topics["fields"], "Name", [{"name": "TopicId", "type": "uuid", "versions": "13+", "mapKey": True,
                                              "ignorable": True, "about": "The unique topic ID."}])


def _list_config_resources(spec: dict[str, Any]) -> None:
    spec["name"] = spec["name"].replace("ListClientMetricsResources", "ListConfigResources")
    spec["validVersions"] = "0-1"
    if spec["type"] == "request":
        spec["fields"] = [{"name": "ResourceTypes", "type": "[]int8", "versions": "1+",
                           "about": "The config resource types to list; empty: every type the broker supports."}]
        return
    resources = next(f for f in spec["fields"] if f["name"] == "ClientMetricsResources")
    resources.update(name="ConfigResources", type="[]ConfigResource", about="Each config resource in the response.")
    resources["fields"] = [
        {"name": "ResourceName", "type": "string", "versions": "0+", "about": "The resource name."},
        {"name": "ResourceType", "type": "int8", "versions": "1+", "ignorable": True, "default": 16,
         "about": "The resource type."}]


def apply(spec: dict[str, Any]) -> bool:
    """Bring `spec` to the versions above in place; True when it was changed."""
    name = spec["name"]
    if name.startswith("ListClientMetricsResources"):
        _list_config_resources(spec)
        return True
    if name in _TRANSACTION_V2_VERSIONS:
        spec["validVersions"] = _TRANSACTION_V2_VERSIONS[name]
        if name.startswith("Produce"):
            _produce_topic_ids(spec)
        return True
    if name not in _V1_SAME and name not in _EDITS:
        return False
    spec["validVersions"] = "0-1"
    spec.pop("latestVersionUnstable", None)
    edit = _EDITS.get(name)
    if edit is not None:
        edit(spec)
    return True


def _field(name: str, type_: str, about: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, "versions": "0+", "about": about, **extra}


def _error(about: str) -> list[dict[str, Any]]:
    return [_field("ErrorCode", "int16", f"The {about} error code, or 0 if there was no error."),
            _field("ErrorMessage", "string", f"The {about} error message, or null if there was no error.",
                   nullableVersions="0+", default="null")]


def _message(api_key: int, name: str, kind: str, fields: list[dict[str, Any]]) -> dict[str, Any]:
    spec: dict[str, Any] = {"apiKey": api_key, "type": kind, "name": name, "validVersions": "0",
                            "flexibleVersions": "0+", "fields": fields}
    if kind == "request":
        spec["listeners"] = ["broker"]
    return spec


_THROTTLE = _field("ThrottleTimeMs", "int32", "The duration in milliseconds for which the request was throttled "
                   "due to a quota violation, or zero if the request did not violate any quota.")
_TOPIC_NAME = _field("TopicName", "string", "The topic name.", entityType="topicName")
_TOPIC_ID = _field("TopicId", "uuid", "The unique topic ID.")
_GROUP_ID = _field("GroupId", "string", "The group identifier.", entityType="groupId")
_PARTITION_INDEX = _field("PartitionIndex", "int32", "The partition index.")

ADDED: dict[str, dict[str, Any]] = {
    "DescribeShareGroupOffsetsRequest.json": _message(90, "DescribeShareGroupOffsetsRequest", "request", [
        _field("Groups", "[]DescribeShareGroupOffsetsRequestGroup", "The groups to describe offsets for.", fields=[
            _GROUP_ID,
            _field("Topics", "[]DescribeShareGroupOffsetsRequestTopic",
                   "The topics to describe offsets for, or null for all topic-partitions.", nullableVersions="0+",
                   fields=[_TOPIC_NAME, _field("Partitions", "[]int32", "The partitions.")])])]),
    "DescribeShareGroupOffsetsResponse.json": _message(90, "DescribeShareGroupOffsetsResponse", "response", [
        _THROTTLE,
        _field("Groups", "[]DescribeShareGroupOffsetsResponseGroup", "The results for each group.", fields=[
            _GROUP_ID,
            _field("Topics", "[]DescribeShareGroupOffsetsResponseTopic", "The results for each topic.", fields=[
                _TOPIC_NAME, _TOPIC_ID,
                _field("Partitions", "[]DescribeShareGroupOffsetsResponsePartition", "The partitions.", fields=[
                    _PARTITION_INDEX,
                    _field("StartOffset", "int64", "The share-partition start offset."),
                    _field("LeaderEpoch", "int32", "The leader epoch of the partition."),
                    *_error("partition-level")])]),
            *_error("group-level")])]),
    "AlterShareGroupOffsetsRequest.json": _message(91, "AlterShareGroupOffsetsRequest", "request", [
        _GROUP_ID,
        _field("Topics", "[]AlterShareGroupOffsetsRequestTopic", "The topics to alter offsets for.", fields=[
            _TOPIC_NAME,
            _field("Partitions", "[]AlterShareGroupOffsetsRequestPartition", "Each partition to alter offsets for.",
                   fields=[_PARTITION_INDEX, _field("StartOffset", "int64", "The share-partition start offset.")])])]),
    "AlterShareGroupOffsetsResponse.json": _message(91, "AlterShareGroupOffsetsResponse", "response", [
        _THROTTLE, *_error("top-level"),
        _field("Responses", "[]AlterShareGroupOffsetsResponseTopic", "The results for each topic.", fields=[
            _TOPIC_NAME, _TOPIC_ID,
            _field("Partitions", "[]AlterShareGroupOffsetsResponsePartition", "The partitions.",
                   fields=[_PARTITION_INDEX, *_error("partition")])])]),
    "DeleteShareGroupOffsetsRequest.json": _message(92, "DeleteShareGroupOffsetsRequest", "request", [
        _GROUP_ID,
        _field("Topics", "[]DeleteShareGroupOffsetsRequestTopic", "The topics to delete offsets for.",
               fields=[_TOPIC_NAME])]),
    "DeleteShareGroupOffsetsResponse.json": _message(92, "DeleteShareGroupOffsetsResponse", "response", [
        _THROTTLE, *_error("top-level"),
        _field("Responses", "[]DeleteShareGroupOffsetsResponseTopic", "The results for each topic.",
               fields=[_TOPIC_NAME, _TOPIC_ID, *_error("topic-level")])]),
}
