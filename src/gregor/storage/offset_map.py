"""The cleaner's map from record key to the latest offset holding it, in bounded memory.

As Kafka's SkimpyOffsetMap, keys are stored as 16-byte hashes, so the memory a map takes
depends on its number of entries only; a collision (about 2^-64 for a billion keys) would make
the cleaner drop a record whose key merely shares a hash with a later one, the risk Kafka takes
with MD5. A CPython dict of 16-byte keys and int offsets costs about 130 bytes per entry
(measured on 3.11); `ENTRY_BYTES` leaves room for the dict's growth steps.
"""

from __future__ import annotations

from hashlib import blake2b

ENTRY_BYTES = 160


def key_hash(key: bytes) -> bytes:
    return blake2b(key, digest_size=16).digest()


class OffsetMap:
    """Key hash → latest offset, holding at most `capacity` keys; `latest_offset` is the last offset mapped."""

    def __init__(self, memory_bytes: int, load_factor: float = 0.9) -> None:
        self.capacity = max(int(memory_bytes * load_factor) // ENTRY_BYTES, 1)
        self.offsets: dict[bytes, int] = {}
        self.latest_offset = -1

    def __len__(self) -> int:
        return len(self.offsets)

    @property
    def is_full(self) -> bool:
        return len(self.offsets) >= self.capacity

    def put(self, key: bytes, offset: int) -> None:
        self.offsets[key_hash(key)] = offset

    def get(self, key: bytes) -> int:
        """The latest offset mapped for `key`, else -1."""
        return self.offsets.get(key_hash(key), -1)
