"""Which version of each API to speak with a broker: the highest both sides honour.

The client declares, per API, the range whose semantics its code implements (not merely what
the codec can encode: sending a version means honouring its fields). A broker declares its
ranges in its ApiVersions response. Components that own an API not listed here (the producer's
Produce, the consumer's Fetch) pass their own range with each request.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from gregor.client.errors import KafkaException
from gregor.protocol.error_codes import ErrorCode
from gregor.protocol.messages import ApiKey

CLIENT_API_VERSIONS: dict[int, tuple[int, int]] = {
    ApiKey.API_VERSIONS: (0, 4),
    ApiKey.METADATA: (1, 12),
    ApiKey.CREATE_TOPICS: (0, 7),
    ApiKey.DELETE_TOPICS: (0, 6),
    ApiKey.CREATE_PARTITIONS: (0, 3),
    ApiKey.DESCRIBE_CONFIGS: (0, 4),
    ApiKey.ALTER_CONFIGS: (0, 2),
    ApiKey.INCREMENTAL_ALTER_CONFIGS: (0, 1),
    ApiKey.DESCRIBE_CLUSTER: (0, 1),
    ApiKey.DESCRIBE_QUORUM: (0, 1),
    ApiKey.FIND_COORDINATOR: (0, 6),
    ApiKey.LIST_GROUPS: (0, 5),
    ApiKey.DESCRIBE_GROUPS: (0, 5),
    ApiKey.SHARE_GROUP_DESCRIBE: (1, 1),
    ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS: (0, 0),
    ApiKey.ALTER_SHARE_GROUP_OFFSETS: (0, 0),
    ApiKey.DELETE_SHARE_GROUP_OFFSETS: (0, 0),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, 0),
    ApiKey.DELETE_GROUPS: (0, 2),
    ApiKey.OFFSET_FETCH: (1, 9),
    ApiKey.OFFSET_COMMIT: (2, 9),
    ApiKey.OFFSET_DELETE: (0, 0),
    ApiKey.DELETE_RECORDS: (0, 2),
    ApiKey.LIST_OFFSETS: (1, 10),
    ApiKey.ELECT_LEADERS: (0, 2),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: (0, 0),
    ApiKey.DESCRIBE_LOG_DIRS: (0, 4),
    ApiKey.CREATE_ACLS: (1, 3),  # v1+: ACLs with a pattern type
    ApiKey.DESCRIBE_ACLS: (1, 3),
    ApiKey.DELETE_ACLS: (1, 3),
    ApiKey.ALTER_CLIENT_QUOTAS: (0, 1),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: (0, 1),
    ApiKey.LIST_TRANSACTIONS: (0, 1),
    ApiKey.DESCRIBE_TRANSACTIONS: (0, 0),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: (0, 0),
    ApiKey.UPDATE_FEATURES: (0, 2),
}


@dataclass(frozen=True)
class BrokerApiVersions:
    """The version ranges one broker advertised in ApiVersions, by API key."""

    ranges: dict[int, tuple[int, int]]

    @classmethod
    def from_entries(cls, entries: Iterable) -> BrokerApiVersions:
        """From the `api_keys` entries of an ApiVersionsResponse."""
        return cls({entry.api_key: (entry.min_version, entry.max_version) for entry in entries})

    def supports(self, api_key: int, version: int = 0) -> bool:
        low, high = self.ranges.get(api_key, (0, -1))
        return low <= version <= high

    def max_version(self, api_key: int) -> int | None:
        found = self.ranges.get(api_key)
        return found[1] if found else None

    def pick(self, api_key: int, client_range: tuple[int, int] | None = None) -> int:
        """The highest version in both the broker's and the client's range.

        Raises KafkaException(UNSUPPORTED_VERSION) when the ranges do not meet, naming both.
        """
        client_low, client_high = client_range or client_versions(api_key)
        broker = self.ranges.get(api_key)
        if broker is not None:
            version = min(client_high, broker[1])
            if version >= max(client_low, broker[0]):
                return version
        offered = f"v{broker[0]}-v{broker[1]}" if broker else "no version"
        raise KafkaException(ErrorCode.UNSUPPORTED_VERSION,
                             f"the broker supports {offered} of {_api_name(api_key)}, "
                             f"the client needs v{client_low}-v{client_high}")


def _api_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return f"API key {api_key}"


def client_versions(api_key: int) -> tuple[int, int]:
    """The client's declared range for an API; an API without one must be given a range."""
    try:
        return CLIENT_API_VERSIONS[api_key]
    except KeyError:
        raise ValueError(f"no client version range declared for API key {api_key}; "
                         "pass versions=(min, max) with the request") from None
