"""`uvarint_table`: the same bytes as `uvarint_bytes` for every value it holds, one to three bytes."""

from __future__ import annotations

from itertools import chain

import pytest

from gregor.protocol.primitives import Reader, uvarint_bytes, uvarint_table


def test_every_value_is_encoded_as_uvarint_bytes_does_and_reads_back() -> None:
    table = uvarint_table(1 << 21)
    assert len(table) == 1 << 21
    checked = chain(range(1 << 15), range(1 << 15, 1 << 21, 7), [(1 << 21) - 1])  # every 1- and 2-byte one
    assert all(table[value] == uvarint_bytes(value) for value in checked)
    for value in (0, 127, 128, 16383, 16384, (1 << 21) - 1):
        assert Reader(table[value]).uvarint() == value
    uvarint_table.cache_clear()  # not kept for the rest of the worker's tests: two million objects


def test_a_shorter_table_is_a_prefix_and_a_longer_one_is_refused() -> None:
    assert uvarint_table(300) == uvarint_table(1 << 15)[:300]
    assert uvarint_table(1 << 15) is uvarint_table(1 << 15)  # built once, shared by its users
    assert uvarint_table(0) == ()
    with pytest.raises(ValueError):
        uvarint_table((1 << 21) + 1)
