"""Client configuration: the Java client's keys, types, defaults and checks for the three roles.

A user writes ``Producer({"bootstrap.servers": "localhost:9092", "linger.ms": 5})``, or the same
keys as keyword arguments with underscores (``linger_ms=5``), or both. A keyword argument wins
over the same key in the dict, as in confluent-kafka: the dict is the shared base, the keywords
are the call's own overrides. `parse_config` checks every key against its role's table
(`config_keys`), coerces values by type ("5" -> 5, "true" -> True, "a,b" -> ("a", "b")), checks
ranges and choices, applies the Java client's cross-key rules, and returns a read-only
`ClientConfig` (``config.linger_ms`` or ``config["linger.ms"]``).

Defaults are those of the Java client 3.9 except where listed below.

Deliberate differences from the Java client
-------------------------------------------
- ``linger.ms`` defaults to 5, Kafka 4.0's default (3.9's is 0).
- ``max.in.flight.requests.per.connection`` above 5 with idempotence on is an error even when
  idempotence was left at its default, as in Kafka 4.0 (3.9 disabled idempotence silently). An
  unset ``enable.idempotence`` is still switched off silently by ``acks`` other than all or by
  ``retries=0``; an explicit ``enable.idempotence=true`` with either is an error (both versions).
- An unknown key raises `ConfigError` naming it and the likely intended key (Java logs a warning
  and ignores it). A key of another role ("group.id" given to a producer) is named as such.
- ``security.protocol`` PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL; ``sasl.mechanism`` PLAIN,
  SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER with an unsecured token made from the
  ``unsecuredLogin*`` options of ``sasl.jaas.config``, or a signed token read from the file that
  ``sasl.oauthbearer.token.endpoint.url=file://...`` names (GSSAPI, Java's default, raises). TLS key
  material as PEM or PKCS12 (``ssl.truststore.*``, ``ssl.keystore.*``; JKS raises). The login is
  ``sasl.jaas.config`` (PlainLoginModule / ScramLoginModule with username and password) or, as
  librdkafka names them, ``sasl.username`` and ``sasl.password``. Other ``ssl.*`` / ``sasl.*``
  keys (callback handlers, ``sasl.login.*``, Kerberos) raise.
- Java's JMX metrics keys (``metric.reporters``, ``metrics.*``, ``auto.include.jmx.reporter``),
  ``security.providers``, ``config.providers`` and the admin's ``bootstrap.controllers`` raise,
  saying that Gregor's client has no such thing.
- ``acks`` accepts ints as well as strings and is stored as an int: -1 (all), 0 or 1.
- ``key.serializer``/``value.serializer`` and the deserializers default to "bytes" (values pass
  through as bytes, as in kafka-python and confluent-kafka) instead of being required.
- Class-valued keys (serializers, ``partitioner.class``, ``interceptor.classes``,
  ``partition.assignment.strategy``) take Python classes, instances, callables, import paths
  ("package.module:Name") or short names; the resolvers in `serialization`, `partitioner` and
  `interceptors` turn them into objects and understand the Java class names of Kafka's built-ins.
- ``partition.assignment.strategy`` holds assignor protocol names: the default is
  ("range", "cooperative-sticky") (Java's RangeAssignor, CooperativeStickyAssignor), and Java
  class names of Kafka's assignors are turned into those names.
- ``client.id`` stays "" when unset; the role classes pick "producer-1" and the like (Java does
  it while parsing the config, from a process-wide counter).
- There are no ``*.serializer.encoding`` keys: pass ``StringSerializer(encoding=...)`` instead.
- ``enable.metrics.push`` is accepted, but Gregor's client pushes no metrics (KIP-714).
"""

from __future__ import annotations

import difflib
import enum
import importlib
import re
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Callable, Iterator, Mapping

INT_MAX = 2**31 - 1
MAX_IN_FLIGHT_FOR_IDEMPOTENCE = 5


class ConfigError(ValueError):
    """A setting that cannot be used; the message names the key and, where it can, the fix."""


class Role(enum.Enum):
    """The kinds of client; each has its own key table."""

    PRODUCER = "producer"
    CONSUMER = "consumer"
    ADMIN = "admin"
    SHARE_CONSUMER = "share consumer"


class ConfigType(enum.Enum):
    """The Java ConfigDef types that client keys use; CLASS_LIST is Java's LIST of classes."""

    BOOLEAN = "boolean"
    INT = "int"
    LONG = "long"
    STRING = "string"
    LIST = "list"
    CLASS = "class"
    CLASS_LIST = "class list"


Check = Callable[[str, Any], Any]


@dataclass(frozen=True)
class ConfigKey:
    """One key of a role's table; `check` validates a typed value and returns its stored form."""

    name: str
    type: ConfigType
    default: Any
    check: Check | None = None
    coerce: Check | None = None  # replaces the type's coercion where a key takes more forms

    def parse(self, value: object) -> Any:
        """Coerce a user's value to this key's type and check it."""
        if value is None:
            if self.default is None:
                return None
            raise ConfigError(f"{self.name} must not be None")
        typed = (self.coerce or _COERCE[self.type])(self.name, value)
        return self.check(self.name, typed) if self.check else typed


def import_object(path: str, key: str) -> Any:
    """Load "package.module:Name" (or "package.module.Name"), naming `key` if that fails."""
    module_name, colon, attribute = path.partition(":")
    if not colon:
        module_name, _, attribute = path.rpartition(".")
    if not module_name or not attribute:
        raise ConfigError(f"{key}: {path!r} is neither a known name nor an import path "
                          f"like 'package.module:Name'")
    try:
        found: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as error:
        raise ConfigError(f"{key}: cannot import {path!r}: {error}") from None
    return found


# -- coercion by type ------------------------------------------------------------------------

def _type_error(name: str, value: object, expected: str) -> ConfigError:
    return ConfigError(f"{name} must be {expected}, not {type(value).__name__} {value!r}")


def _to_boolean(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise _type_error(name, value, "a boolean (True, False, 'true' or 'false')")


def _integer_parser(bits: int, label: str) -> Check:
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1

    def parse(name: str, value: object) -> int:
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str):
            try:
                number = int(value.strip())
            except ValueError:
                raise _type_error(name, value, f"an {label}") from None
        else:
            raise _type_error(name, value, f"an {label}")
        if not low <= number <= high:
            raise ConfigError(f"{name} must fit a {bits}-bit {label}, not {number}")
        return number

    return parse


def _to_string(name: str, value: object) -> str:
    if isinstance(value, str):
        return value.strip()
    raise _type_error(name, value, "a string")


def _to_list(name: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(item.strip() for item in value.split(",") if item.strip())
    if isinstance(value, (list, tuple)):
        return tuple(_to_string(name, item) for item in value if not isinstance(item, str) or item.strip())
    raise _type_error(name, value, "a list or a comma-separated string")


def _to_class(name: str, value: object) -> Any:
    if isinstance(value, str):
        if not value.strip():
            raise ConfigError(f"{name} must not be empty")
        return value.strip()
    if isinstance(value, (int, float, bool, bytes, list, tuple, dict)):
        raise _type_error(name, value, "a class, an instance, a callable or a name")
    return value


def _to_class_list(name: str, value: object) -> tuple[Any, ...]:
    if isinstance(value, str):
        return _to_list(name, value)
    if isinstance(value, (list, tuple)):
        return tuple(_to_class(name, item) for item in value if not isinstance(item, str) or item.strip())
    return (_to_class(name, value),)


_COERCE: dict[ConfigType, Check] = {
    ConfigType.BOOLEAN: _to_boolean,
    ConfigType.INT: _integer_parser(32, "int"),
    ConfigType.LONG: _integer_parser(64, "integer (long)"),
    ConfigType.STRING: _to_string,
    ConfigType.LIST: _to_list,
    ConfigType.CLASS: _to_class,
    ConfigType.CLASS_LIST: _to_class_list,
}


# -- value checks ----------------------------------------------------------------------------

def _at_least(minimum: int) -> Check:
    def check(name: str, value: int) -> int:
        if value < minimum:
            raise ConfigError(f"{name} must be at least {minimum}, not {value}")
        return value
    return check


def _between(low: int, high: int) -> Check:
    def check(name: str, value: int) -> int:
        if not low <= value <= high:
            raise ConfigError(f"{name} must be between {low} and {high}, not {value}")
        return value
    return check


def _one_of(*choices: str, ignore_case: bool = False) -> Check:
    def check(name: str, value: str) -> str:
        for choice in choices:
            if value == choice or (ignore_case and value.lower() == choice.lower()):
                return choice
        raise ConfigError(f"{name} must be one of {', '.join(choices)}, not {value!r}")
    return check


def _non_empty(name: str, value: str) -> str:
    if not value:
        raise ConfigError(f"{name} must not be empty (leave it unset instead)")
    return value


def _gzip_level(name: str, value: int) -> int:
    if value != -1 and not 1 <= value <= 9:
        raise ConfigError(f"{name} must be between 1 and 9 or -1 (the default level), not {value}")
    return value


_ACKS = {"all": -1, "-1": -1, "0": 0, "1": 1}


def _acks(name: str, value: object) -> int:
    text = str(value).strip().lower()
    if isinstance(value, bool) or text not in _ACKS:
        raise ConfigError(f"{name} must be one of all, -1, 0, 1, not {value!r}")
    return _ACKS[text]


_HOST_PORT = re.compile(r"(?:[A-Za-z_]+://)?\[?([0-9A-Za-z\-%._:]+?)\]?:([0-9]+)")


def _bootstrap_servers(name: str, value: tuple[str, ...]) -> tuple[str, ...]:
    for server in value:
        match = _HOST_PORT.fullmatch(server)
        if not match or int(match.group(2)) > 65535:
            raise ConfigError(f"{name}: {server!r} is not host:port (e.g. localhost:9092)")
    return value


_SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


def _security_protocol(name: str, value: str) -> str:
    return _one_of(*_SECURITY_PROTOCOLS, ignore_case=True)(name, value).upper()


def _sasl_mechanism(name: str, value: str) -> str:
    mechanism = value.strip().upper()
    if mechanism not in ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER"):
        raise ConfigError(f"{name}={value} is not supported: Gregor's client speaks PLAIN, SCRAM-SHA-256, "
                          f"SCRAM-SHA-512 and OAUTHBEARER")
    return mechanism


_JAVA_ASSIGNORS = {
    "RangeAssignor": "range",
    "RoundRobinAssignor": "roundrobin",
    "StickyAssignor": "sticky",
    "CooperativeStickyAssignor": "cooperative-sticky",
}


def _assignors(name: str, value: tuple[Any, ...]) -> tuple[Any, ...]:
    if not value:
        raise ConfigError(f"{name} must name at least one assignor")
    prefix = "org.apache.kafka.clients.consumer."
    return tuple(_JAVA_ASSIGNORS.get(item.removeprefix(prefix), item) if isinstance(item, str) else item
                 for item in value)


# -- the tables ------------------------------------------------------------------------------

_BOOL, _INT, _LONG, _STR = ConfigType.BOOLEAN, ConfigType.INT, ConfigType.LONG, ConfigType.STRING
_LIST, _CLASS, _CLASSES = ConfigType.LIST, ConfigType.CLASS, ConfigType.CLASS_LIST
_AT_LEAST_0 = _at_least(0)

_COMMON = (
    ConfigKey("bootstrap.servers", _LIST, (), _bootstrap_servers),
    ConfigKey("client.id", _STR, ""),
    ConfigKey("client.dns.lookup", _STR, "use_all_dns_ips",
              _one_of("use_all_dns_ips", "resolve_canonical_bootstrap_servers_only")),
    ConfigKey("metadata.max.age.ms", _LONG, 300000, _AT_LEAST_0),
    ConfigKey("send.buffer.bytes", _INT, 131072, _at_least(-1)),
    ConfigKey("receive.buffer.bytes", _INT, 65536, _at_least(-1)),
    ConfigKey("reconnect.backoff.ms", _LONG, 50, _AT_LEAST_0),
    ConfigKey("reconnect.backoff.max.ms", _LONG, 1000, _AT_LEAST_0),
    ConfigKey("retry.backoff.ms", _LONG, 100, _AT_LEAST_0),
    ConfigKey("retry.backoff.max.ms", _LONG, 1000, _AT_LEAST_0),
    ConfigKey("request.timeout.ms", _INT, 30000, _AT_LEAST_0),
    ConfigKey("socket.connection.setup.timeout.ms", _LONG, 10000),
    ConfigKey("socket.connection.setup.timeout.max.ms", _LONG, 30000),
    ConfigKey("connections.max.idle.ms", _LONG, 540000),
    ConfigKey("security.protocol", _STR, "PLAINTEXT", _security_protocol),
    ConfigKey("sasl.mechanism", _STR, "GSSAPI"),
    ConfigKey("sasl.jaas.config", _STR, None),
    ConfigKey("sasl.username", _STR, None),
    ConfigKey("sasl.password", _STR, None),
    ConfigKey("sasl.oauthbearer.token.endpoint.url", _STR, None),
    ConfigKey("sasl.login.callback.handler.class", _STR, None),
    ConfigKey("ssl.truststore.type", _STR, "JKS"),
    ConfigKey("ssl.truststore.location", _STR, None),
    ConfigKey("ssl.truststore.password", _STR, None),
    ConfigKey("ssl.truststore.certificates", _STR, None),
    ConfigKey("ssl.keystore.type", _STR, "JKS"),
    ConfigKey("ssl.keystore.location", _STR, None),
    ConfigKey("ssl.keystore.password", _STR, None),
    ConfigKey("ssl.keystore.certificate.chain", _STR, None),
    ConfigKey("ssl.keystore.key", _STR, None),
    ConfigKey("ssl.key.password", _STR, None),
    ConfigKey("ssl.endpoint.identification.algorithm", _STR, "https"),
    ConfigKey("ssl.enabled.protocols", _LIST, ("TLSv1.2", "TLSv1.3")),
    ConfigKey("ssl.protocol", _STR, "TLSv1.3"),
    ConfigKey("ssl.cipher.suites", _LIST, ()),
    ConfigKey("metadata.recovery.strategy", _STR, "none", _one_of("none", "rebootstrap", ignore_case=True)),
    ConfigKey("enable.metrics.push", _BOOL, True),
)

_PRODUCER = (
    ConfigKey("receive.buffer.bytes", _INT, 32768, _at_least(-1)),
    ConfigKey("buffer.memory", _LONG, 33554432, _AT_LEAST_0),
    ConfigKey("retries", _INT, INT_MAX, _between(0, INT_MAX)),
    ConfigKey("acks", _STR, -1, coerce=_acks),
    ConfigKey("compression.type", _STR, "none", _one_of("none", "gzip", "snappy", "lz4", "zstd")),
    ConfigKey("compression.gzip.level", _INT, -1, _gzip_level),
    ConfigKey("compression.lz4.level", _INT, 9, _between(1, 17)),
    ConfigKey("compression.zstd.level", _INT, 3, _between(-131072, 22)),
    ConfigKey("batch.size", _INT, 16384, _AT_LEAST_0),
    ConfigKey("partitioner.adaptive.partitioning.enable", _BOOL, True),
    ConfigKey("partitioner.availability.timeout.ms", _LONG, 0, _AT_LEAST_0),
    ConfigKey("partitioner.ignore.keys", _BOOL, False),
    ConfigKey("partitioner.class", _CLASS, None),
    ConfigKey("linger.ms", _LONG, 5, _AT_LEAST_0),
    ConfigKey("delivery.timeout.ms", _INT, 120000, _AT_LEAST_0),
    ConfigKey("max.request.size", _INT, 1048576, _AT_LEAST_0),
    ConfigKey("max.block.ms", _LONG, 60000, _AT_LEAST_0),
    ConfigKey("metadata.max.idle.ms", _LONG, 300000, _at_least(5000)),
    ConfigKey("max.in.flight.requests.per.connection", _INT, 5, _at_least(1)),
    ConfigKey("key.serializer", _CLASS, "bytes"),
    ConfigKey("value.serializer", _CLASS, "bytes"),
    ConfigKey("interceptor.classes", _CLASSES, ()),
    ConfigKey("enable.idempotence", _BOOL, True),
    ConfigKey("transaction.timeout.ms", _INT, 60000),
    ConfigKey("transactional.id", _STR, None, _non_empty),
)

_CONSUMER = (
    ConfigKey("group.id", _STR, None),
    ConfigKey("group.instance.id", _STR, None, _non_empty),
    ConfigKey("group.protocol", _STR, "classic", _one_of("classic", "consumer", ignore_case=True)),
    ConfigKey("group.remote.assignor", _STR, None),
    ConfigKey("session.timeout.ms", _INT, 45000),
    ConfigKey("heartbeat.interval.ms", _INT, 3000),
    ConfigKey("max.poll.interval.ms", _INT, 300000, _at_least(1)),
    ConfigKey("max.poll.records", _INT, 500, _at_least(1)),
    ConfigKey("partition.assignment.strategy", _CLASSES, ("range", "cooperative-sticky"), _assignors),
    ConfigKey("enable.auto.commit", _BOOL, True),
    ConfigKey("auto.commit.interval.ms", _INT, 5000, _AT_LEAST_0),
    ConfigKey("auto.offset.reset", _STR, "latest", _one_of("latest", "earliest", "none")),
    ConfigKey("fetch.min.bytes", _INT, 1, _AT_LEAST_0),
    ConfigKey("fetch.max.bytes", _INT, 52428800, _AT_LEAST_0),
    ConfigKey("fetch.max.wait.ms", _INT, 500, _AT_LEAST_0),
    ConfigKey("max.partition.fetch.bytes", _INT, 1048576, _AT_LEAST_0),
    ConfigKey("isolation.level", _STR, "read_uncommitted", _one_of("read_uncommitted", "read_committed")),
    ConfigKey("check.crcs", _BOOL, True),
    ConfigKey("client.rack", _STR, ""),
    ConfigKey("key.deserializer", _CLASS, "bytes"),
    ConfigKey("value.deserializer", _CLASS, "bytes"),
    ConfigKey("interceptor.classes", _CLASSES, ()),
    ConfigKey("exclude.internal.topics", _BOOL, True),
    ConfigKey("allow.auto.create.topics", _BOOL, True),
    ConfigKey("default.api.timeout.ms", _INT, 60000, _AT_LEAST_0),
)

# Java's ShareConsumerConfig: the consumer's keys less those of offsets and the classic group.
_SHARE_CONSUMER = (
    ConfigKey("group.id", _STR, None),
    ConfigKey("share.acknowledgement.mode", _STR, "implicit", _one_of("implicit", "explicit")),
    ConfigKey("max.poll.records", _INT, 500, _at_least(1)),
    ConfigKey("fetch.min.bytes", _INT, 1, _AT_LEAST_0),
    ConfigKey("fetch.max.bytes", _INT, 52428800, _AT_LEAST_0),
    ConfigKey("fetch.max.wait.ms", _INT, 500, _AT_LEAST_0),
    ConfigKey("max.partition.fetch.bytes", _INT, 1048576, _AT_LEAST_0),
    ConfigKey("check.crcs", _BOOL, True),
    ConfigKey("client.rack", _STR, ""),
    ConfigKey("key.deserializer", _CLASS, "bytes"),
    ConfigKey("value.deserializer", _CLASS, "bytes"),
    ConfigKey("default.api.timeout.ms", _INT, 60000, _AT_LEAST_0),
)

_ADMIN = (
    # KIP-919: the controllers to bootstrap from instead of brokers (`--bootstrap-controller`)
    ConfigKey("bootstrap.controllers", _LIST, (), _bootstrap_servers),
    ConfigKey("connections.max.idle.ms", _LONG, 300000),
    ConfigKey("retries", _INT, INT_MAX, _between(0, INT_MAX)),
    ConfigKey("default.api.timeout.ms", _INT, 60000, _AT_LEAST_0),
)


def _table(role_keys: tuple[ConfigKey, ...]) -> Mapping[str, ConfigKey]:
    return MappingProxyType({key.name: key for key in _COMMON + role_keys})


_TABLES: dict[Role, Mapping[str, ConfigKey]] = {
    Role.PRODUCER: _table(_PRODUCER),
    Role.CONSUMER: _table(_CONSUMER),
    Role.ADMIN: _table(_ADMIN),
    Role.SHARE_CONSUMER: _table(_SHARE_CONSUMER),
}

_UNSUPPORTED_PREFIXES = {
    "ssl.": "this TLS setting is not supported by Gregor's client (see docs/security.md for the ssl.* keys it reads)",
    "sasl.": "this SASL setting is not supported by Gregor's client (it reads sasl.mechanism, sasl.jaas.config, "
             "sasl.username, sasl.password and sasl.oauthbearer.token.endpoint.url)",
}
_JAVA_METRICS = "Gregor's client has no Java (JMX) metrics reporting"
_UNSUPPORTED = {
    "metric.reporters": _JAVA_METRICS,
    "metrics.sample.window.ms": _JAVA_METRICS,
    "metrics.num.samples": _JAVA_METRICS,
    "metrics.recording.level": _JAVA_METRICS,
    "auto.include.jmx.reporter": _JAVA_METRICS,
    "security.providers": "Java security providers do not apply to Gregor's client",
    "config.providers": "Java config providers do not apply to Gregor's client",
}


def config_keys(role: Role) -> Mapping[str, ConfigKey]:
    """The keys a role accepts, by name (read-only), for role classes and documentation."""
    return _TABLES[role]


# -- the parsed result -----------------------------------------------------------------------

class ClientConfig(Mapping[str, Any]):
    """The settings of one client, complete with defaults: ``config["linger.ms"]`` or
    ``config.linger_ms``. `explicit` holds the keys the user set (Java's ``originals()``),
    which some rules depend on."""

    __slots__ = ("role", "explicit", "_values")

    def __init__(self, role: Role, values: Mapping[str, Any], explicit: frozenset[str]) -> None:
        self.role = role
        self.explicit = explicit
        self._values = dict(values)

    def __getitem__(self, key: str) -> Any:
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __getattr__(self, name: str) -> Any:
        if not name.startswith("_"):
            key = name.replace("_", ".")
            if key in self._values:
                return self._values[key]
        raise AttributeError(f"{self.role.value} config has no setting {name!r}")

    def __repr__(self) -> str:
        return f"ClientConfig({self.role.value}, {self._values!r})"


def parse_config(role: Role, config: Mapping[str, object] | None = None, /,
                 **kwargs: object) -> ClientConfig:
    """Parse a role's settings from a dict of Kafka keys and/or underscore keyword arguments.

    Keyword arguments win over the same key in the dict. Raises ConfigError for an unknown
    key, a value of the wrong type or range, or settings that contradict each other.
    """
    supplied: dict[str, tuple[str, bool, object]] = {}
    for name, value in (config or {}).items():
        if not isinstance(name, str):
            raise ConfigError(f"setting names must be strings, not {type(name).__name__} {name!r}")
        supplied[name] = (name, False, value)
    for name, value in kwargs.items():
        supplied[name.replace("_", ".")] = (name, True, value)
    table = _TABLES[role]
    values: dict[str, Any] = {}
    for key, (spelling, as_keyword, value) in supplied.items():
        if key not in table:
            raise _unknown_key(role, key, spelling, as_keyword)
        values[key] = table[key].parse(value)
    explicit = frozenset(values)
    for key in table.values():
        values.setdefault(key.name, key.default)
    _check_common(values, explicit)
    if role in _ROLE_RULES:
        _ROLE_RULES[role](values, explicit)
    return ClientConfig(role, values, explicit)


def _unknown_key(role: Role, key: str, spelling: str, as_keyword: bool) -> ConfigError:
    """Say why a key is refused: unsupported, another role's, or misspelled (and of what)."""
    dotted = key.replace("_", ".")
    for prefix, reason in _UNSUPPORTED_PREFIXES.items():
        if dotted.startswith(prefix):
            return ConfigError(f"{spelling}: {reason}")
    if dotted in _UNSUPPORTED:
        return ConfigError(f"{spelling}: {_UNSUPPORTED[dotted]}")
    message = f"unknown {role.value} setting {spelling!r}"
    if dotted in _TABLES[role]:
        return ConfigError(f"{message}; did you mean {dotted!r}?")
    owners = [other.value for other, table in _TABLES.items() if dotted in table]
    if Role.CONSUMER.value in owners and Role.SHARE_CONSUMER.value in owners:
        owners.remove(Role.SHARE_CONSUMER.value)  # the share consumer's keys are the consumer's
    if owners:
        return ConfigError(f"{spelling!r} is a {' and '.join(owners)} setting; "
                           f"a {role.value} does not take it")
    candidates = [name.replace(".", "_") if as_keyword else name for name in _TABLES[role]]
    close = difflib.get_close_matches(spelling, candidates, n=1, cutoff=0.75)
    return ConfigError(f"{message}; did you mean {close[0]!r}?" if close else message)


# -- rules across keys -----------------------------------------------------------------------

def _check_common(values: dict[str, Any], explicit: frozenset[str]) -> None:
    if values.get("bootstrap.controllers"):
        if values["bootstrap.servers"]:
            raise ConfigError("You cannot set both bootstrap.servers and bootstrap.controllers.")
    elif not values["bootstrap.servers"]:
        raise ConfigError("bootstrap.servers is required: a list of host:port, e.g. 'localhost:9092'"
                          + (" (or bootstrap.controllers)" if "bootstrap.controllers" in values else ""))
    if values["security.protocol"].startswith("SASL_"):
        values["sasl.mechanism"] = _sasl_mechanism("sasl.mechanism", values["sasl.mechanism"])
        has_pair = values["sasl.username"] is not None and values["sasl.password"] is not None
        if not has_pair and not values["sasl.jaas.config"]:
            raise ConfigError(f"security.protocol={values['security.protocol']} needs a login: sasl.jaas.config "
                              f"(username=\"...\" password=\"...\") or sasl.username and sasl.password")
    if "reconnect.backoff.ms" in explicit and "reconnect.backoff.max.ms" not in explicit:
        values["reconnect.backoff.max.ms"] = values["reconnect.backoff.ms"]


def _check_producer(values: dict[str, Any], explicit: frozenset[str]) -> None:
    """Kafka's postProcessAndValidateIdempotenceConfigs and configureDeliveryTimeout."""
    if values["enable.idempotence"]:
        asked = "enable.idempotence" in explicit
        if values["retries"] == 0:
            if asked:
                raise ConfigError("retries must not be 0 when enable.idempotence is true")
            values["enable.idempotence"] = False
        if values["acks"] != -1:
            if asked:
                raise ConfigError("acks must be all when enable.idempotence is true; otherwise "
                                  "idempotence cannot be guaranteed")
            values["enable.idempotence"] = False
    in_flight = values["max.in.flight.requests.per.connection"]
    if values["enable.idempotence"] and in_flight > MAX_IN_FLIGHT_FOR_IDEMPOTENCE:
        raise ConfigError(f"max.in.flight.requests.per.connection must be at most "
                          f"{MAX_IN_FLIGHT_FOR_IDEMPOTENCE} for the idempotent producer, not "
                          f"{in_flight}; set enable.idempotence=false to allow more")
    if values["transactional.id"] is not None and not values["enable.idempotence"]:
        raise ConfigError("transactional.id needs enable.idempotence=true (and acks=all, retries > 0)")
    least_delivery = min(values["linger.ms"] + values["request.timeout.ms"], INT_MAX)
    if values["delivery.timeout.ms"] < least_delivery:
        if "delivery.timeout.ms" in explicit:
            raise ConfigError("delivery.timeout.ms must be at least linger.ms + request.timeout.ms "
                              f"({least_delivery}), not {values['delivery.timeout.ms']}")
        values["delivery.timeout.ms"] = least_delivery


def _check_consumer(values: dict[str, Any], explicit: frozenset[str]) -> None:
    """Kafka's maybeOverrideEnableAutoCommit and checkGroupRemoteAssignor."""
    if values["group.id"] is None:
        if "enable.auto.commit" not in explicit:
            values["enable.auto.commit"] = False
        elif values["enable.auto.commit"]:
            raise ConfigError("enable.auto.commit cannot be true without a group.id")
    if values["group.protocol"] == "classic" and values["group.remote.assignor"]:
        raise ConfigError("group.remote.assignor cannot be set when group.protocol=classic")
    if values["group.protocol"] == "consumer":
        for key in _CLASSIC_ONLY:
            if key in explicit:
                raise ConfigError(f"{key} is not supported with group.protocol=consumer: the broker decides it "
                                  f"(its group.consumer.* keys; group.remote.assignor picks the broker's assignor)")


# Kafka's consumer refuses these with group.protocol=consumer (checkGroupProtocolConfigs).
_CLASSIC_ONLY = ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy")


def _check_share_consumer(values: dict[str, Any], explicit: frozenset[str]) -> None:
    if not values["group.id"]:
        raise ConfigError("group.id is required: a share consumer is always a member of a share group")


_ROLE_RULES: dict[Role, Callable[[dict[str, Any], frozenset[str]], None]] = {
    Role.PRODUCER: _check_producer,
    Role.CONSUMER: _check_consumer,
    Role.SHARE_CONSUMER: _check_share_consumer,
}
