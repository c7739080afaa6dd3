"""Java's String.hashCode and Kafka's Utils.abs, so groups land where Kafka puts them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gregor.coordinator.partitioning import java_string_hashcode, kafka_abs, partition_for


def _by_definition(text: str) -> int:
    """s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, reduced to a signed int32."""
    data = text.encode("utf-16-be", "surrogatepass")
    units = [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]
    total = sum(unit * 31 ** (len(units) - 1 - i) for i, unit in enumerate(units)) % (1 << 32)
    return total - (1 << 32) if total >= 1 << 31 else total


def test_known_hash_codes() -> None:
    assert java_string_hashcode("") == 0
    assert java_string_hashcode("a") == 97
    assert java_string_hashcode("ab") == 97 * 31 + 98
    # ((((104*31+101)*31+108)*31+108)*31+111)
    assert java_string_hashcode("hello") == 99162322
    # Outside the BMP a character is two code units: 0xD83D*31 + 0xDE00.
    assert java_string_hashcode("\U0001F600") == 0xD83D * 31 + 0xDE00 == 1772899


def test_overflow_wraps_to_negative_int32() -> None:
    # The classic Java example whose hash is Integer.MIN_VALUE.
    assert java_string_hashcode("polygenelubricants") == -(1 << 31)
    value = java_string_hashcode("console-consumer-12345")
    assert value == _by_definition("console-consumer-12345")


@given(st.text())
def test_hash_matches_the_definition(text: str) -> None:
    assert java_string_hashcode(text) == _by_definition(text)


def test_kafka_abs_maps_int_min_to_zero() -> None:
    assert kafka_abs(-(1 << 31)) == 0
    assert kafka_abs(-5) == 5
    assert kafka_abs(7) == 7


def test_partition_for() -> None:
    assert partition_for("", 50) == 0
    assert partition_for("hello", 50) == 99162322 % 50 == 22
    assert partition_for("polygenelubricants", 50) == 0


def test_negative_hashes_use_abs_not_a_sign_mask() -> None:
    """Utils.abs(-h) == h; masking off the sign bit (h & 0x7fffffff) would pick another partition."""
    assert java_string_hashcode("Hello World") == -862545276
    assert partition_for("Hello World", 50) == 862545276 % 50 == 26
    assert (-862545276 & 0x7FFFFFFF) % 50 == 22
