"""Client configuration: keys, defaults, coercion, precedence, suggestions and Kafka's cross-key rules."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gregor.client.config import (
    ClientConfig,
    ConfigError,
    Role,
    config_keys,
    import_object,
    parse_config,
)

SERVERS = {"bootstrap.servers": "localhost:9092"}


def producer(**kwargs: object) -> ClientConfig:
    return parse_config(Role.PRODUCER, SERVERS, **kwargs)


def consumer(**kwargs: object) -> ClientConfig:
    return parse_config(Role.CONSUMER, SERVERS, **kwargs)


# The Java client's defaults (3.9; linger.ms from 4.0), written out independently of the tables.
PRODUCER_DEFAULTS = {
    "batch.size": 16384, "linger.ms": 5, "buffer.memory": 33554432, "max.block.ms": 60000,
    "acks": -1, "retries": 2147483647, "retry.backoff.ms": 100, "retry.backoff.max.ms": 1000,
    "delivery.timeout.ms": 120000, "request.timeout.ms": 30000,
    "max.in.flight.requests.per.connection": 5, "max.request.size": 1048576,
    "enable.idempotence": True, "compression.type": "none", "partitioner.class": None,
    "partitioner.ignore.keys": False, "partitioner.adaptive.partitioning.enable": True,
    "partitioner.availability.timeout.ms": 0, "metadata.max.age.ms": 300000,
    "metadata.max.idle.ms": 300000, "client.id": "", "transactional.id": None,
    "transaction.timeout.ms": 60000, "compression.gzip.level": -1, "compression.lz4.level": 9,
    "compression.zstd.level": 3, "send.buffer.bytes": 131072, "receive.buffer.bytes": 32768,
    "connections.max.idle.ms": 540000, "interceptor.classes": (),
}
CONSUMER_DEFAULTS = {
    "group.id": None, "group.instance.id": None, "session.timeout.ms": 45000,
    "heartbeat.interval.ms": 3000, "max.poll.interval.ms": 300000, "max.poll.records": 500,
    "fetch.min.bytes": 1, "fetch.max.bytes": 52428800, "fetch.max.wait.ms": 500,
    "max.partition.fetch.bytes": 1048576, "auto.offset.reset": "latest",
    "auto.commit.interval.ms": 5000, "partition.assignment.strategy": ("range", "cooperative-sticky"),
    "isolation.level": "read_uncommitted", "check.crcs": True, "client.rack": "",
    "exclude.internal.topics": True, "allow.auto.create.topics": True,
    "default.api.timeout.ms": 60000, "group.protocol": "classic", "receive.buffer.bytes": 65536,
    "connections.max.idle.ms": 540000,
}
ADMIN_DEFAULTS = {"default.api.timeout.ms": 60000, "retries": 2147483647,
                  "connections.max.idle.ms": 300000, "request.timeout.ms": 30000}
COMMON_DEFAULTS = {
    "security.protocol": "PLAINTEXT", "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 1000,
    "socket.connection.setup.timeout.ms": 10000, "socket.connection.setup.timeout.max.ms": 30000,
    "request.timeout.ms": 30000, "retry.backoff.ms": 100, "metadata.max.age.ms": 300000,
}


@pytest.mark.parametrize("role, expected", [
    (Role.PRODUCER, PRODUCER_DEFAULTS), (Role.CONSUMER, CONSUMER_DEFAULTS), (Role.ADMIN, ADMIN_DEFAULTS),
])
def test_defaults_are_the_java_clients(role: Role, expected: dict[str, object]) -> None:
    config = parse_config(role, SERVERS)
    for key, value in {**COMMON_DEFAULTS, **expected}.items():
        assert config[key] == value, key
    assert config.explicit == {"bootstrap.servers"}


def test_consumer_without_group_turns_auto_commit_off_unless_asked() -> None:
    assert consumer()["enable.auto.commit"] is False
    assert consumer(group_id="g")["enable.auto.commit"] is True
    with pytest.raises(ConfigError, match="enable.auto.commit cannot be true without a group.id"):
        consumer(enable_auto_commit=True)


@pytest.mark.parametrize("role", list(Role))
def test_every_default_parses_to_itself(role: Role) -> None:
    for key in config_keys(role).values():
        assert key.parse(key.default) == key.default, key.name


def test_dict_keys_keywords_and_precedence() -> None:
    config = parse_config(Role.PRODUCER, {"bootstrap.servers": "a:1", "linger.ms": 7, "acks": "1"},
                          linger_ms=20, batch_size="100")
    assert config.linger_ms == 20 and config["linger.ms"] == 20
    assert config.batch_size == 100 and config.acks == 1
    assert config.explicit == {"bootstrap.servers", "linger.ms", "acks", "batch.size"}
    assert parse_config(Role.ADMIN, bootstrap_servers=["a:1", "b:2"]).bootstrap_servers == ("a:1", "b:2")


def test_config_is_read_only_and_names_missing_attributes() -> None:
    config = producer()
    with pytest.raises(TypeError):
        config["linger.ms"] = 1  # type: ignore[index]
    with pytest.raises(AttributeError, match="no setting 'group_id'"):
        _ = config.group_id
    assert dict(config)["batch.size"] == 16384 and len(config) == len(config_keys(Role.PRODUCER))


@pytest.mark.parametrize("value, expected", [
    ("true", True), (" TRUE ", True), ("false", False), (True, True), (False, False),
])
def test_booleans_accept_kafka_strings(value: object, expected: bool) -> None:
    assert producer(partitioner_ignore_keys=value).partitioner_ignore_keys is expected


def test_lists_accept_comma_strings_and_sequences() -> None:
    config = parse_config(Role.CONSUMER, {"bootstrap.servers": " a:1 , [::1]:9092,,PLAINTEXT://c:3 "})
    assert config.bootstrap_servers == ("a:1", "[::1]:9092", "PLAINTEXT://c:3")
    assert consumer(interceptor_classes="m:A, m:B").interceptor_classes == ("m:A", "m:B")


@pytest.mark.parametrize("kwargs, message", [
    ({"linger_ms": "soon"}, "linger.ms must be an integer"),
    ({"batch_size": 1.5}, "batch.size must be an int, not float"),
    ({"batch_size": True}, "batch.size must be an int, not bool"),
    ({"batch_size": 2**31}, "batch.size must fit a 32-bit int"),
    ({"batch_size": -1}, "batch.size must be at least 0"),
    ({"enable_idempotence": "yes"}, "enable.idempotence must be a boolean"),
    ({"compression_type": "brotli"}, "compression.type must be one of none, gzip, snappy, lz4, zstd"),
    ({"compression_gzip_level": 0}, "compression.gzip.level must be between 1 and 9 or -1"),
    ({"acks": 2}, "acks must be one of all, -1, 0, 1"),
    ({"acks": True}, "acks must be one of"),
    ({"client_id": 5}, "client.id must be a string, not int"),
    ({"transactional_id": ""}, "transactional.id must not be empty"),
    ({"key_serializer": 5}, "key.serializer must be a class, an instance, a callable or a name"),
    ({"linger_ms": None}, "linger.ms must not be None"),
    ({"metadata_max_idle_ms": 4999}, "metadata.max.idle.ms must be at least 5000"),
])
def test_bad_values_name_the_key(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        producer(**kwargs)


@pytest.mark.parametrize("kwargs, message", [
    ({"auto_offset_reset": "smallest"}, "auto.offset.reset must be one of latest, earliest, none"),
    ({"isolation_level": "serializable"}, "isolation.level must be one of read_uncommitted, read_committed"),
    ({"partition_assignment_strategy": ""}, "must name at least one assignor"),
    ({"group_remote_assignor": "uniform"}, "group.remote.assignor cannot be set when group.protocol=classic"),
])
def test_bad_consumer_values(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        consumer(**kwargs)


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_longs_parse_from_ints_and_strings(number: int) -> None:
    key = config_keys(Role.PRODUCER)["socket.connection.setup.timeout.ms"]
    assert key.parse(number) == key.parse(f" {number} ") == number


def test_acks_spellings() -> None:
    for value in ("all", "ALL", "-1", -1):
        assert producer(acks=value).acks == -1
    assert producer(acks="0").acks == 0 and producer(acks=1).acks == 1


def test_assignor_java_names_become_protocol_names() -> None:
    config = consumer(partition_assignment_strategy=[
        "org.apache.kafka.clients.consumer.RoundRobinAssignor", "StickyAssignor", "my.module:Mine"])
    assert config.partition_assignment_strategy == ("roundrobin", "sticky", "my.module:Mine")


# -- unknown keys ----------------------------------------------------------------------------

@pytest.mark.parametrize("config, kwargs, message", [
    ({"lingr.ms": 1}, {}, "unknown producer setting 'lingr.ms'; did you mean 'linger.ms'\\?"),
    ({"linger_ms": 1}, {}, "unknown producer setting 'linger_ms'; did you mean 'linger.ms'\\?"),
    ({}, {"lingerms": 1}, "unknown producer setting 'lingerms'; did you mean 'linger_ms'\\?"),
    ({}, {"bacth_size": 1}, "did you mean 'batch_size'\\?"),
    ({"acks.all": 1}, {}, "unknown producer setting 'acks.all'"),
    ({"group.id": "g"}, {}, "'group.id' is a consumer setting; a producer does not take it"),
    ({"group_id": "g"}, {}, "'group_id' is a consumer setting; a producer does not take it"),
    ({"default.api.timeout.ms": 1}, {}, "is a consumer and admin setting; a producer does not take it"),
    ({"ssl.truststore.password.file": "/x"}, {}, "ssl.truststore.password.file: this TLS setting is not supported"),
    ({}, {"sasl_kerberos_service_name": "kafka"}, "sasl_kerberos_service_name: this SASL setting is not"),
    ({"metric.reporters": "x"}, {}, "metric.reporters: Gregor's client has no Java \\(JMX\\) metrics"),
])
def test_unknown_keys_are_named_with_a_suggestion(config: dict[str, object], kwargs: dict[str, object],
                                                  message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config(Role.PRODUCER, {**SERVERS, **config}, **kwargs)


def test_unknown_key_far_from_any_has_no_suggestion() -> None:
    with pytest.raises(ConfigError) as raised:
        producer(zzzzzz=1)
    assert str(raised.value) == "unknown producer setting 'zzzzzz'"


def test_non_string_key() -> None:
    with pytest.raises(ConfigError, match="setting names must be strings"):
        parse_config(Role.ADMIN, {1: "x"})  # type: ignore[dict-item]


# -- common rules ----------------------------------------------------------------------------

def test_bootstrap_servers_are_required_and_checked() -> None:
    with pytest.raises(ConfigError, match="bootstrap.servers is required"):
        parse_config(Role.PRODUCER)
    with pytest.raises(ConfigError, match="bootstrap.servers is required"):
        parse_config(Role.CONSUMER, {"bootstrap.servers": " , "})
    for bad in ("localhost", "localhost:port", "host:70000"):
        with pytest.raises(ConfigError, match=f"bootstrap.servers: '{bad}' is not host:port"):
            parse_config(Role.ADMIN, bootstrap_servers=bad)


def test_an_admin_client_bootstraps_from_brokers_or_controllers_not_both() -> None:
    """KIP-919's bootstrap.controllers: an admin setting only, exclusive with bootstrap.servers."""
    from gregor.client.network import NetworkSettings
    config = parse_config(Role.ADMIN, {"bootstrap.controllers": "localhost:9093"})
    settings = NetworkSettings.from_config(config)
    assert (settings.bootstrap_servers, settings.to_controllers) == ((("localhost", 9093),), True)
    assert NetworkSettings.from_config(parse_config(Role.ADMIN, SERVERS)).to_controllers is False
    with pytest.raises(ConfigError, match="You cannot set both bootstrap.servers and bootstrap.controllers."):
        parse_config(Role.ADMIN, {**SERVERS, "bootstrap.controllers": "localhost:9093"})
    with pytest.raises(ConfigError, match=r"bootstrap.servers is required.*\(or bootstrap.controllers\)"):
        parse_config(Role.ADMIN)
    with pytest.raises(ConfigError, match="'bootstrap.controllers' is a admin setting"):
        producer(bootstrap_controllers="localhost:9093")


def test_security_protocols() -> None:
    assert producer(security_protocol="plaintext").security_protocol == "PLAINTEXT"
    assert producer(security_protocol="ssl").security_protocol == "SSL"
    login = {"sasl_username": "alice", "sasl_password": "secret"}
    assert producer(security_protocol="sasl_ssl", sasl_mechanism="scram-sha-512", **login).sasl_mechanism == \
        "SCRAM-SHA-512"
    with pytest.raises(ConfigError, match="security.protocol must be one of PLAINTEXT, SSL"):
        producer(security_protocol="TLS")
    with pytest.raises(ConfigError, match="sasl.mechanism=GSSAPI is not supported"):
        producer(security_protocol="SASL_PLAINTEXT", **login)  # Java's default mechanism
    with pytest.raises(ConfigError, match="needs a login: sasl.jaas.config"):
        producer(security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN")


def test_reconnect_backoff_max_follows_an_explicit_base() -> None:
    assert producer(reconnect_backoff_ms=3000).reconnect_backoff_max_ms == 3000
    config = producer(reconnect_backoff_ms=3000, reconnect_backoff_max_ms=9000)
    assert config.reconnect_backoff_max_ms == 9000


# -- producer rules: idempotence, transactions, delivery timeout ------------------------------

def test_default_idempotence_is_dropped_silently_by_weaker_acks_or_no_retries() -> None:
    assert producer().enable_idempotence is True
    assert producer(acks=1).enable_idempotence is False
    assert producer(acks=0).enable_idempotence is False
    assert producer(retries=0).enable_idempotence is False


def test_explicit_idempotence_refuses_contradictions() -> None:
    with pytest.raises(ConfigError, match="acks must be all when enable.idempotence is true"):
        producer(enable_idempotence=True, acks="1")
    with pytest.raises(ConfigError, match="retries must not be 0 when enable.idempotence is true"):
        producer(enable_idempotence="true", retries=0)
    assert producer(enable_idempotence=False, acks=1).acks == 1


def test_in_flight_limit_with_idempotence() -> None:
    assert producer(max_in_flight_requests_per_connection=5).enable_idempotence is True
    with pytest.raises(ConfigError, match="must be at most 5 for the idempotent producer, not 6"):
        producer(max_in_flight_requests_per_connection=6)
    with pytest.raises(ConfigError, match="at most 5"):
        producer(max_in_flight_requests_per_connection=6, enable_idempotence=True)
    assert producer(max_in_flight_requests_per_connection=6, enable_idempotence=False).enable_idempotence is False
    assert producer(max_in_flight_requests_per_connection=6, acks=1).enable_idempotence is False


def test_transactional_id_needs_idempotence() -> None:
    assert producer(transactional_id="tx").transactional_id == "tx"
    for kwargs in ({"enable_idempotence": False}, {"acks": 1}):
        with pytest.raises(ConfigError, match="transactional.id needs enable.idempotence=true"):
            producer(transactional_id="tx", **kwargs)


def test_delivery_timeout_covers_linger_and_request_timeout() -> None:
    assert producer(linger_ms=100000, request_timeout_ms=30000).delivery_timeout_ms == 130000
    with pytest.raises(ConfigError, match="delivery.timeout.ms must be at least linger.ms \\+ "
                                          "request.timeout.ms \\(30005\\), not 1000"):
        producer(delivery_timeout_ms=1000)


# -- import paths ----------------------------------------------------------------------------

def test_import_object_takes_colon_and_dotted_paths() -> None:
    assert import_object("json:dumps", "k") is json.dumps
    assert import_object("json.decoder.JSONDecoder", "k") is json.decoder.JSONDecoder
    assert import_object("json:JSONDecoder.decode", "k") is json.JSONDecoder.decode
    with pytest.raises(ConfigError, match="value.serializer: cannot import 'json:nope'"):
        import_object("json:nope", "value.serializer")
    with pytest.raises(ConfigError, match="k: 'nodots' is neither a known name nor an import path"):
        import_object("nodots", "k")
    with pytest.raises(ConfigError, match="cannot import 'no_such_module_here:X'"):
        import_object("no_such_module_here:X", "k")
