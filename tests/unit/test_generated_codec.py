"""The committed codec is exactly what the generator writes from the specs, and it round-trips."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gregor.protocol.exceptions import DecodeError
from gregor.protocol.messages import REQUESTS, ApiVersionsRequest, MetadataRequest, ProduceRequest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPECS = os.path.join(os.path.dirname(REPO), "shared", "kafka-protocol")


@pytest.mark.skipif(not os.path.isdir(SPECS), reason="the shared protocol specs are not beside the repo")
def test_generated_code_matches_the_generator(tmp_path):
    subprocess.run([sys.executable, os.path.join(REPO, "tools", "generate_protocol.py"),
                    "--spec-dir", SPECS, "--out", str(tmp_path)], check=True)
    committed = os.path.join(REPO, "src", "gregor", "protocol")
    for root, _, files in os.walk(tmp_path):
        for name in files:
            generated = os.path.join(root, name)
            relative = os.path.relpath(generated, tmp_path)
            with open(generated, encoding="utf-8") as a, open(os.path.join(committed, relative), encoding="utf-8") as b:
                assert a.read() == b.read(), f"{relative} differs from the generator's output: regenerate"


def test_known_bytes_of_metadata_v1_and_api_versions_v3():
    assert MetadataRequest(topics=[MetadataRequest.MetadataRequestTopic(name="ab")]).encode(1) == \
        b"\x00\x00\x00\x01\x00\x02ab"
    assert ApiVersionsRequest(client_software_name="c", client_software_version="1").encode(3) == \
        b"\x02c\x021\x00"


def test_produce_request_round_trips_at_every_version():
    request = ProduceRequest(acks=-1, timeout_ms=1000, topic_data=[ProduceRequest.TopicProduceData(
        name="t", partition_data=[ProduceRequest.PartitionProduceData(index=3, records=b"abc")])])
    for version in range(0, 12):
        decoded = ProduceRequest.decode(request.encode(version), version)
        assert bytes(decoded.topic_data[0].partition_data[0].records) == b"abc"
        assert decoded.acks == -1 and decoded.topic_data[0].partition_data[0].index == 3


@settings(max_examples=300, deadline=None)
@given(api_key=st.sampled_from(sorted(REQUESTS)), data=st.binary(max_size=200), version_pick=st.integers(0, 100))
def test_every_request_decoder_only_raises_decode_error_on_garbage(api_key, data, version_pick):
    request_class = REQUESTS[api_key]
    low, high = request_class.VALID_VERSIONS
    version = low + version_pick % (high - low + 1)
    try:
        request_class.decode(data, version)
    except DecodeError:
        pass


def test_huge_array_length_in_a_tiny_frame_fails_before_allocating():
    frame = b"\x00\x01" + b"\x00\x00\x00\x00" + b"\x7f\xff\xff\xff"
    with pytest.raises(DecodeError):
        ProduceRequest.decode(frame, 3)
