"""Option parsing without Spark: each bad option is one error that names it."""

from __future__ import annotations

import json

import pytest

from gregor.client import TopicPartition
from gregor.spark.bounds import ByTimestamp, Earliest, Latest, SpecificOffsets
from gregor.spark.errors import OptionError
from gregor.spark.options import parse_sink_options, parse_source_options

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "t"}


def source(streaming=False, **options):
    return parse_source_options({**BASE, **options}, streaming=streaming)


def test_defaults_and_case_insensitive_names():
    parsed = parse_source_options({"KAFKA.BOOTSTRAP.SERVERS": "h:1", "SubscribePattern": "t.*",
                                   "MAXOFFSETSPERTRIGGER": "5", "includeheaders": "TRUE",
                                   "kafka.isolation.level": "read_committed"}, streaming=True)
    assert parsed.subscription.pattern == "t.*"
    assert parsed.max_offsets_per_trigger == 5
    assert parsed.read.include_headers and parsed.read.fail_on_data_loss
    assert parsed.read.client_config == {"bootstrap.servers": "h:1", "isolation.level": "read_committed"}
    assert parsed.starting is None and parsed.ending is None
    assert parsed.max_trigger_delay_ms == 15 * 60 * 1000


def test_bounds():
    assert isinstance(source(startingOffsets="earliest").starting, Earliest)
    assert isinstance(source(endingOffsets="latest").ending, Latest)
    specific = source(startingOffsets=json.dumps({"t": {"0": 5, "1": -2}})).starting
    assert specific == SpecificOffsets("startingOffsets", {TopicPartition("t", 0): 5, TopicPartition("t", 1): -2})
    assert source(startingTimestamp="1000", startingOffsetsByTimestamp='{"t": {"0": 5}}').starting == \
        ByTimestamp("startingTimestamp", timestamp=1000)
    assert source(endingOffsetsByTimestamp='{"t": {"0": 5}}').ending == \
        ByTimestamp("endingOffsetsByTimestamp", timestamps={TopicPartition("t", 0): 5}, on_missing="latest")
    assert source(True, maxTriggerDelay="30s", minOffsetsPerTrigger="3").max_trigger_delay_ms == 30000
    assert source(True, startingOffsets=json.dumps({"t": {"0": -1}})).starting.offsets == {TopicPartition("t", 0): -1}


@pytest.mark.parametrize(("options", "streaming", "named"), [
    ({"subscribe": None}, False, "subscribe"),
    ({"assign": '{"t": [0]}'}, False, "subscribe"),
    ({"subscribe": None, "assign": '{"t": "0"}'}, False, "assign"),
    ({"subscribe": None, "subscribePattern": "(unclosed"}, False, "subscribePattern"),
    ({"subscribe": "a,,b"}, False, "subscribe"),
    ({"kafka.bootstrap.servers": None}, False, "kafka.bootstrap.servers"),
    ({"startingOffsets": "{not json"}, False, "startingOffsets"),
    ({"startingOffsets": '{"t": {"x": 1}}'}, False, "startingOffsets"),
    ({"startingOffsets": "latest"}, False, "startingOffsets"),
    ({"startingOffsets": '{"t": {"0": -1}}'}, False, "startingOffsets"),
    ({"endingOffsets": "earliest"}, False, "endingOffsets"),
    ({"endingOffsets": '{"t": {"0": -2}}'}, False, "endingOffsets"),
    ({"endingOffsets": "latest"}, True, "endingOffsets"),
    ({"endingTimestamp": "5"}, True, "endingTimestamp"),
    ({"startingTimestamp": "yesterday"}, False, "startingTimestamp"),
    ({"startingOffsetsByTimestampStrategy": "closest"}, False, "startingOffsetsByTimestampStrategy"),
    ({"maxOffsetsPerTrigger": "0"}, True, "maxOffsetsPerTrigger"),
    ({"minOffsetsPerTrigger": "many"}, True, "minOffsetsPerTrigger"),
    ({"maxTriggerDelay": "soon"}, True, "maxTriggerDelay"),
    ({"failOnDataLoss": "yes"}, False, "failOnDataLoss"),
    ({"startingOffset": "earliest"}, False, "startingoffset"),
    ({"kafka.auto.offset.reset": "earliest"}, False, "kafka.auto.offset.reset"),
    ({"kafka.value.deserializer": "json"}, False, "kafka.value.deserializer"),
    ({"kafka.fetch.max.wait.ms": "soon"}, False, "kafka.fetch.max.wait.ms"),
    ({"kafka.no.such.key": "1"}, False, "kafka.no.such.key"),
])
def test_bad_source_options_name_the_option(options, streaming, named):
    merged = {key: value for key, value in {**BASE, **options}.items() if value is not None}
    with pytest.raises(OptionError) as caught:
        parse_source_options(merged, streaming=streaming)
    assert caught.value.option == named
    assert repr(named) in str(caught.value)


def test_sink_options():
    parsed = parse_sink_options({"kafka.bootstrap.servers": "h:1", "topic": "out", "kafka.linger.ms": "5",
                                 "checkpointLocation": "/tmp/x", "queryname": "q"})
    assert parsed.topic == "out" and parsed.client_config == {"bootstrap.servers": "h:1", "linger.ms": "5"}
    for bad, named in [({"kafka.key.serializer": "str"}, "kafka.key.serializer"),
                       ({"subscribe": "t"}, "subscribe"),
                       ({"kafka.transactional.id": "tx"}, "kafka.transactional.id"),
                       ({"topic": ""}, "topic")]:
        with pytest.raises(OptionError) as caught:
            parse_sink_options({"kafka.bootstrap.servers": "h:1", **bad})
        assert caught.value.option == named


def test_security_options_pass_through_together():
    jaas = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="p";'
    secured = {**BASE, "kafka.security.protocol": "SASL_SSL", "kafka.sasl.mechanism": "PLAIN",
               "kafka.sasl.jaas.config": jaas, "kafka.ssl.truststore.type": "PEM"}
    parsed = parse_source_options(secured, streaming=False)
    assert parsed.read.client_config["security.protocol"] == "SASL_SSL"
    assert parsed.read.client_config["sasl.jaas.config"] == jaas
    assert parse_sink_options({"kafka.bootstrap.servers": "h:1", **{k: v for k, v in secured.items()
                                                                   if k.startswith("kafka.sasl")},
                               "kafka.security.protocol": "SASL_PLAINTEXT"}).client_config["sasl.mechanism"] == "PLAIN"
    with pytest.raises(OptionError, match=r"kafka\.\*.*sasl.mechanism=GSSAPI is not supported"):
        parse_source_options({**BASE, "kafka.security.protocol": "SASL_SSL"}, streaming=False)
    with pytest.raises(OptionError, match=r"'kafka\.ssl\.keystore\.filename'"):
        parse_source_options({**secured, "kafka.ssl.keystore.filename": "x"}, streaming=False)
