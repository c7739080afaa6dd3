"""Byte-level mutations aimed at a length-prefixed binary protocol.

Besides bit flips and truncation, most mutations write the values that break length handling:
int16/int32 lengths of -1, 0, 0x7fff, 0x7fffffff, and unsigned varints of 1 to 5 bytes (compact
lengths) at random places, so that every array, string, bytes and records length of a frame is
sooner or later replaced by one that lies about what follows.
"""

from __future__ import annotations

import random
import struct

_INTERESTING_16 = (-1, 0, 1, 0x7F, 0xFF, 0x7FFF, -0x8000, 1000)
_INTERESTING_32 = (-1, 0, 1, 0x7FFF, 0xFFFF, 0x7FFFFFFF, -0x80000000, 1_000_001, 100 * 1024 * 1024)
_VARINTS = (b"\x00", b"\x01", b"\x7f", b"\xff\x7f", b"\xff\xff\x03", b"\xff\xff\xff\x7f", b"\xff\xff\xff\xff\x0f",
            b"\x80\x80\x80\x80\x80", b"\xc1\x84\x3d")  # the last: 1,000,001


def mutate(data: bytes, rng: random.Random, other: bytes | None = None) -> bytes:
    """1 to 4 random mutations of `data`; `other` (another seed) may be spliced in."""
    out = bytearray(data)
    for _ in range(rng.choice((1, 1, 2, 2, 3, 4))):
        _MUTATIONS[rng.randrange(len(_MUTATIONS))](out, rng, other)
    return bytes(out)


def _position(out: bytearray, rng: random.Random, width: int = 1) -> int:
    return rng.randrange(max(len(out) - width + 1, 1))


def _flip_bit(out: bytearray, rng: random.Random, other: bytes | None) -> None:
    if out:
        out[_position(out, rng)] ^= 1 << rng.randrange(8)


def _set_byte(out: bytearray, rng: random.Random, other: bytes | None) -> None:
    if out:
        out[_position(out, rng)] = rng.choice((0, 1, 0x7F, 0x80, 0xFF, rng.randrange(256)))


def _set_int16(out: bytearray, rng: random.Random, other: bytes | None) -> None:
    if len(out) >= 2:
        struct.pack_into(">h", out, _position(out, rng, 2), rng.choice(_INTERESTING_16))


def _set_int32(out: bytearray, rng: random.Random, other: bytes | None) -> None:
    if len(out) >= 4:
        struct.pack_into(">i", out, _position(out, rng, 4), rng.choice(_INTERESTING_32))


def _adjust_int32(out: bytearray, rng: random.Random, other: bytes | None) -> None:
    """A length off by a little: the classic off-by-one of a length check."""
    if len(out) >= 4:
        pos = _position(out, rng, 4)
        (value,) = struct.unpack_from(">i", out, pos)
        struct.pack_into(">i", out, pos, max(-0x80000000, min(0x7FFFFFFF, value + rng.choice((-2, -1, 1, 2, 64)))))


def _put_varint(out: bytearray, rng: random.Random, other: bytes | None) -> None:
    varint = rng.choice(_VARINTS)
    pos = _position(out, rng)
    if rng.random() < 0.5:
        out[pos:pos + len(varint)] = varint
    else:
        out[pos:pos] = varint


def _truncate(out: bytearray, rng: random.Random, other: bytes | None) -> None:
    if out:
        del out[rng.randrange(len(out)):]


def _delete_range(out: bytearray, rng: random.Random, other: bytes | None) -> None:
    if out:
        start = rng.randrange(len(out))
        del out[start:start + rng.randint(1, 16)]


def _insert_random(out: bytearray, rng: random.Random, other: bytes | None) -> None:
    pos = _position(out, rng)
    out[pos:pos] = rng.randbytes(rng.randint(1, 8))


def _duplicate_range(out: bytearray, rng: random.Random, other: bytes | None) -> None:
    if out:
        start = rng.randrange(len(out))
        piece = out[start:start + rng.randint(1, 32)]
        pos = _position(out, rng)
        out[pos:pos] = piece


def _splice(out: bytearray, rng: random.Random, other: bytes | None) -> None:
    if other:
        cut = _position(out, rng)
        start = rng.randrange(len(other))
        out[cut:] = other[start:]


_MUTATIONS = (_flip_bit, _set_byte, _set_int16, _set_int32, _set_int32, _adjust_int32, _put_varint,
              _put_varint, _truncate, _delete_range, _insert_random, _duplicate_range, _splice)
