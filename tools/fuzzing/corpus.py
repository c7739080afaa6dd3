"""Valid seeds for the fuzzer: request frames of every advertised API and version, populated with
random field values from the generated classes' schemas, and record sets in every codec.

Seeds are valid on purpose: a mutation of a valid frame reaches far deeper into a decoder than
random bytes do (the structure-aware half of the fuzzer).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from typing import Any

from gregor.protocol.headers import encode_request
from gregor.protocol.messages import REQUESTS, Message
from gregor.records.compression import Compression
from gregor.records.legacy import build_legacy
from gregor.records.record import BatchBuilder

_INT_RANGES = {"int8": (-(1 << 7), (1 << 7) - 1), "int16": (-(1 << 15), (1 << 15) - 1),
               "uint16": (0, (1 << 16) - 1), "int32": (-(1 << 31), (1 << 31) - 1),
               "uint32": (0, (1 << 32) - 1), "int64": (-(1 << 63), (1 << 63) - 1)}
CODECS = (Compression.NONE, Compression.GZIP, Compression.SNAPPY, Compression.LZ4, Compression.ZSTD)


@dataclass(frozen=True)
class RequestSeed:
    api_key: int
    version: int
    frame: bytes  # header and body, without the 4-byte size prefix (what the dispatcher gets)


@dataclass(frozen=True)
class RecordsSeed:
    magic: int
    codec: int
    data: bytes


def advertised_versions() -> dict[int, tuple[int, int]]:
    """Every API key and version range either listener of a broker advertises in ApiVersions."""
    from gregor.broker.handlers import client_handlers, quorum_handlers

    ranges: dict[int, tuple[int, int]] = {}
    for table in (client_handlers(), quorum_handlers()):
        for key, handler in table.items():
            low, high = ranges.get(key, (handler.min_version, handler.max_version))
            ranges[key] = (min(low, handler.min_version), max(high, handler.max_version))
    return dict(sorted(ranges.items()))


def _in(bounds: tuple[int, int] | None, version: int) -> bool:
    return bounds is not None and bounds[0] <= version <= bounds[1]


class MessageBuilder:
    """Random, valid instances of generated message classes, driven by their `_SCHEMA`."""

    def __init__(self, rng: random.Random, records: list[bytes]) -> None:
        self.rng = rng
        self.records = records

    def build(self, root: type[Message], cls: type, version: int) -> Any:
        obj = cls()
        for attr, type_, versions, nullable, tagged, _tag in cls._SCHEMA:
            if not (_in(versions, version) or _in(tagged, version)):
                continue
            setattr(obj, attr, self.value(root, type_, version, _in(nullable, version)))
        return obj

    def value(self, root: type[Message], type_: str, version: int, nullable: bool) -> Any:
        rng = self.rng
        if nullable and rng.random() < 0.15:
            return None
        if type_.startswith("[]"):
            element = type_[2:]
            return [self.value(root, element, version, False) for _ in range(rng.choice((0, 1, 1, 2, 3)))]
        if type_ in _INT_RANGES:
            low, high = _INT_RANGES[type_]
            return rng.choice((0, 1, -1 if low < 0 else 2, rng.randint(low, high), low, high))
        if type_ == "bool":
            return rng.random() < 0.5
        if type_ == "float64":
            return rng.choice((0.0, 1.5, -2.25, 1e300))
        if type_ == "string":
            return "".join(rng.choice("abcxyz_-.0123é") for _ in range(rng.randint(0, 12)))
        if type_ == "bytes":
            return rng.randbytes(rng.randint(0, 16))
        if type_ == "uuid":
            return uuid.UUID(int=rng.getrandbits(128))
        if type_ == "records":
            return rng.choice(self.records)
        return self.build(root, getattr(root, type_), version)


def records_seeds(rng: random.Random) -> list[RecordsSeed]:
    """Record sets as producers send them: v2 batches in every codec (one or two batches, with
    headers, keys, nulls, producer ids) and legacy v0/v1 message sets, plain and compressed."""
    seeds = []
    for codec in CODECS:
        for batches in (1, 2):
            data = b""
            for n in range(batches):
                builder = BatchBuilder(compression=codec, producer_id=rng.choice((-1, 7)), producer_epoch=0,
                                       base_sequence=0 if n == 0 else 3)
                for i in range(rng.randint(1, 4)):
                    key = None if i == 2 else f"k{i}".encode()
                    builder.append(1_700_000_000_000 + i, key, rng.randbytes(rng.randint(0, 40)),
                                   [("h", b"v"), ("n", None)] if i == 1 else ())
                data += builder.build()
            seeds.append(RecordsSeed(2, codec, data))
        if codec == Compression.ZSTD:
            continue
        for magic in (0, 1):
            entries = [(i, 1_700_000_000_000 + i, b"k" if i else None, rng.randbytes(rng.randint(0, 30)))
                       for i in range(rng.randint(1, 4))]
            seeds.append(RecordsSeed(magic, codec, build_legacy(entries, magic, codec)))
    return seeds


def request_seeds(rng: random.Random, per_version: int = 3) -> list[RequestSeed]:
    """`per_version` random frames for every advertised (API key, version)."""
    records = [seed.data for seed in records_seeds(rng)]
    builder = MessageBuilder(rng, records)
    seeds = []
    for api_key, (low, high) in advertised_versions().items():
        request_class = REQUESTS[api_key]
        for version in range(low, high + 1):
            for _ in range(per_version):
                request = builder.build(request_class, request_class, version)
                frame = encode_request(rng.randint(0, 1 << 30), rng.choice((None, "fuzz", "")), request, version)
                seeds.append(RequestSeed(api_key, version, frame[4:]))
    return seeds

