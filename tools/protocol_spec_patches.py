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


def apply(spec: dict[str, Any]) -> bool:
    """Bring `spec` to the versions above in place; True when it was changed."""
    name = spec["name"]
    if name not in _V1_SAME and name not in _EDITS:
        return False
    spec["validVersions"] = "0-1"
    spec.pop("latestVersionUnstable", None)
    edit = _EDITS.get(name)
    if edit is not None:
        edit(spec)
    return True
