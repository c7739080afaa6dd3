"""The producer's record encoding: the path that assembles batches of one shape (null keys, no
headers, values of one size) in C writes exactly the bytes of the general loop, and declines
every other batch; `encode_records`, given a batch's columns, writes those bytes (kafka-python
decodes both, in tests/client/test_producer_internals.py)."""

from __future__ import annotations

from hypothesis import given, settings, strategies as st

from gregor.client.producer.record_encoding import (
    NO_HEADERS, _encode_loop, _encode_uniform, encode_headers, encode_records,
)

NOW = 1_700_000_000_000


@settings(max_examples=150, deadline=None)
@given(count=st.integers(2, 400) | st.integers(1000, 2100), size=st.sampled_from([0, 1, 63, 64, 100, 8191, 8192]),
       deltas=st.lists(st.integers(0, 3) | st.integers(-(1 << 40), 1 << 40), min_size=1, max_size=4),
       run=st.integers(1, 150), offset_delta=st.sampled_from([0, 1, 60, 8150, 16350, 20_000]),
       odd=st.sampled_from([None, "key", "headers", "null value", "other size"]))
def test_the_one_shape_path_writes_the_bytes_of_the_general_loop(count, size, deltas, run, offset_delta, odd):
    records = [(NOW + deltas[(index // run) % len(deltas)], None, bytes([index % 256]) * size, NO_HEADERS)
               for index in range(count)]
    timestamp = records[count // 2][0]
    records[count // 2] = {None: records[count // 2], "key": (timestamp, b"", b"v" * size, NO_HEADERS),
                           "headers": (timestamp, None, b"v" * size, encode_headers([("h", None)])),
                           "null value": (timestamp, None, None, NO_HEADERS),
                           "other size": (timestamp, None, b"v" * (size + 1), NO_HEADERS)}[odd]
    timestamps, keys, values, headers = (list(column) for column in zip(*records))
    loop = _encode_loop(timestamps, keys, values, headers, NOW, offset_delta)
    uniform = None if odd in ("key", "headers") else _encode_uniform(timestamps, values, NOW, offset_delta)
    assert (uniform is not None) == (odd is None)
    assert uniform is None or b"".join(uniform) == loop
    # what a batch hands over: keys and headers None while every key is null and no record has headers
    assert b"".join(encode_records(timestamps, None if odd != "key" else keys, values,
                                   None if odd != "headers" else headers, NOW, offset_delta)) == loop
