"""Broker configuration: Kafka's `server.properties` keys, types and defaults.

A Kafka operator's `server.properties` works unchanged; keys Gregor does not act on are
accepted and reported by DescribeConfigs like any other, so tools keep working. Differences
from Apache Kafka are listed in docs/configuration.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping

from gregor.broker.network import ConnectionLimits, SocketBuffers
from gregor.metadata.authorizer import STANDARD_AUTHORIZER
from gregor.coordinator.config import consumer_assignors
from gregor.coordinator.consumer.limits import CONSUMER_LIMIT_DEFAULTS, consumer_limit_error

LONG_MAX = 9223372036854775807


class ConfigError(ValueError):
    """A configuration value that cannot be used; the message names the key and the fix."""


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: str  # boolean, int, long, double, string, list, password
    default: str | None
    doc: str
    read_only: bool = True


def _key(name: str, type_: str, default: str | None, doc: str, read_only: bool = True) -> ConfigKey:
    return ConfigKey(name, type_, default, doc, read_only)


BROKER_CONFIG_KEYS: dict[str, ConfigKey] = {
    k.name: k
    for k in (
        _key("node.id", "int", "1", "The node id of this broker (and controller)."),
        _key("broker.id", "int", None, "Legacy alias of node.id."),
        _key("process.roles", "list", "broker,controller", "The roles this process plays."),
        _key("controller.quorum.voters", "list", "", "Controller quorum voters: id@host:port,..."),
        _key("controller.quorum.bootstrap.servers", "list", "",
             "Controllers to bootstrap from (KIP-853): only a broker,controller node's own controller listener "
             "(the one-voter quorum of kafka-storage format --standalone); unused when voters are set."),
        _key("controller.listener.names", "list", "CONTROLLER", "Listener names used by the controller."),
        _key("controller.quorum.election.timeout.ms", "int", "1000",
             "How long a voter waits without a leader before it stands for election."),
        _key("controller.quorum.fetch.timeout.ms", "int", "2000",
             "How long a follower waits without a successful fetch before it stands for election."),
        _key("controller.quorum.election.backoff.max.ms", "int", "1000",
             "Longest back-off before a candidate that lost an election tries again."),
        _key("controller.quorum.request.timeout.ms", "int", "2000", "How long a quorum request waits for its answer."),
        _key("controller.quorum.retry.backoff.ms", "int", "20", "Back-off before a failed quorum request is retried."),
        _key("broker.session.timeout.ms", "int", "9000",
             "A broker whose heartbeats stop this long is fenced by the active controller."),
        _key("broker.heartbeat.interval.ms", "int", "2000", "How often a broker heartbeats to the controller."),
        _key("auto.leader.rebalance.enable", "boolean", "true",
             "The active controller moves leadership back to preferred replicas when brokers are imbalanced."),
        _key("leader.imbalance.check.interval.seconds", "long", "300", "How often leader imbalance is checked."),
        _key("leader.imbalance.per.broker.percentage", "int", "10",
             "Share of a broker's preferred partitions led elsewhere above which they are rebalanced."),
        _key("listeners", "list", "PLAINTEXT://localhost:9092", "Listeners the broker binds to."),
        _key("advertised.listeners", "list", None, "Listeners given to clients; defaults to listeners."),
        _key("listener.security.protocol.map", "string",
             "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT", "Listener name to security protocol."),
        _key("inter.broker.listener.name", "string", None, "Listener for broker-to-broker traffic."),
        # Listener security (broker/security): each may also be set per listener as
        # listener.name.<listener>.<key>, which wins over the global value.
        _key("ssl.keystore.type", "string", "JKS", "Key store format: PEM or PKCS12 (Kafka's default JKS is refused)."),
        _key("ssl.keystore.location", "string", None, "Key store file: PEM (key and chain) or PKCS12."),
        _key("ssl.keystore.password", "password", None, "Password of a PKCS12 key store."),
        _key("ssl.keystore.certificate.chain", "password", None, "Inline PEM certificate chain (type PEM)."),
        _key("ssl.keystore.key", "password", None, "Inline PEM private key (type PEM)."),
        _key("ssl.key.password", "password", None, "Password of an encrypted private key."),
        _key("ssl.truststore.type", "string", "JKS", "Trust store format: PEM or PKCS12."),
        _key("ssl.truststore.location", "string", None, "Trust store file (CA certificates)."),
        _key("ssl.truststore.password", "password", None, "Password of a PKCS12 trust store."),
        _key("ssl.truststore.certificates", "password", None, "Inline PEM CA certificates (type PEM)."),
        _key("ssl.client.auth", "string", "none", "Client certificates: none, requested or required."),
        _key("ssl.principal.mapping.rules", "string", "DEFAULT",
             "Rules from a client certificate's subject to a principal name (RULE:pattern/replacement/[LU])."),
        _key("ssl.enabled.protocols", "list", "TLSv1.2,TLSv1.3", "TLS versions accepted."),
        _key("ssl.protocol", "string", "TLSv1.3", "Accepted for compatibility; ssl.enabled.protocols decides."),
        _key("ssl.cipher.suites", "list", "", "Refused when set: Java suite names do not map to OpenSSL's."),
        _key("ssl.endpoint.identification.algorithm", "string", "https",
             "Host name verification of the broker's own TLS connections to other nodes (https or empty)."),
        _key("sasl.enabled.mechanisms", "list", "GSSAPI",
             "SASL mechanisms a SASL listener offers: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER (unsecured or "
             "JWKS-signed JWTs); GSSAPI is refused."),
        _key("sasl.mechanism.inter.broker.protocol", "string", "GSSAPI",
             "Mechanism this broker's own connections use on a SASL inter-broker listener."),
        _key("sasl.mechanism.controller.protocol", "string", "GSSAPI",
             "Mechanism used on a SASL controller listener."),
        _key("sasl.oauthbearer.jwks.endpoint.url", "string", None,
             "file:// URL of the JSON Web Key Set that signed OAUTHBEARER tokens are checked against."),
        _key("sasl.oauthbearer.expected.audience", "list", "", "Audiences a signed token must name one of (aud)."),
        _key("sasl.oauthbearer.expected.issuer", "string", None, "Issuer a signed token must name (iss)."),
        _key("sasl.oauthbearer.scope.claim.name", "string", "scope", "Claim holding a signed token's scope."),
        _key("sasl.oauthbearer.sub.claim.name", "string", "sub", "Claim holding a signed token's principal."),
        _key("sasl.oauthbearer.clock.skew.seconds", "int", "30",
             "Tolerance when checking a signed token's exp, nbf and iat."),
        _key("connection.failed.authentication.delay.ms", "int", "100",
             "How long a connection that failed authentication is held before its answer and close."),
        _key("connections.max.reauth.ms", "long", "0",
             "Longest SASL session before the client must re-authenticate on its connection (KIP-368; 0: never)."),
        _key("broker.rack", "string", None, "Rack of this broker."),
        _key("log.dirs", "list", "./data", "Directories holding the partition logs."),
        _key("log.dir", "string", "./data", "Single log directory, used when log.dirs is unset."),
        _key("metadata.log.dir", "string", None, "Directory of the __cluster_metadata log."),
        _key("num.partitions", "int", "1", "Default number of partitions of a new topic.", False),
        _key("default.replication.factor", "int", "1", "Default replication factor of a new topic.", False),
        _key("auto.create.topics.enable", "boolean", "true", "Create unknown topics on metadata requests.", False),
        _key("delete.topic.enable", "boolean", "true", "Allow topics to be deleted."),
        _key("message.max.bytes", "int", "1048588", "Largest record batch size allowed.", False),
        _key("socket.request.max.bytes", "int", "104857600", "Largest request size accepted."),
        _key("socket.send.buffer.bytes", "int", "-1", "SO_SNDBUF of the listeners' sockets (-1: the OS's)."),
        _key("socket.receive.buffer.bytes", "int", "-1", "SO_RCVBUF of the listeners' sockets (-1: the OS's)."),
        _key("connections.max.idle.ms", "long", "600000",
             "A connection with no bytes read or written for this long is closed (-1: never)."),
        _key("max.connections", "int", "2147483647",
             "Connections the broker keeps open on its listeners; one more is closed when accepted."),
        _key("max.connections.per.ip", "int", "2147483647",
             "Connections kept open from one address; one more is closed when accepted."),
        _key("max.connection.creation.rate", "int", "2147483647",
             "Connections per second accepted on the listeners but the inter-broker one; more are served late."),
        _key("max.connections.per.ip.overrides", "string", "",
             "Per-address exceptions to max.connections.per.ip: address:count,... (IP addresses)."),
        _key("num.network.threads", "int", "3", "Accepted for compatibility; Gregor uses one event loop."),
        _key("num.io.threads", "int", "8", "Accepted for compatibility; Gregor uses one event loop."),
        _key("num.recovery.threads.per.data.dir", "int", "2",
             "Accepted for compatibility; Gregor recovers its logs on its one event loop."),
        _key("max.request.partition.size.limit", "int", "2000",
             "Most partitions one DescribeTopicPartitions answer holds (its response_partition_limit is capped to it)."),
        _key("log.segment.bytes", "int", "1073741824", "Size at which a segment is rolled.", False),
        _key("log.roll.ms", "long", None, "Time after which a segment is rolled (overrides hours)."),
        _key("log.roll.hours", "int", "168", "Time after which a segment is rolled."),
        _key("log.retention.ms", "long", None, "Retention time (overrides minutes and hours).", False),
        _key("log.retention.minutes", "int", None, "Retention time in minutes (overrides hours)."),
        _key("log.retention.hours", "int", "168", "Retention time in hours."),
        _key("log.retention.bytes", "long", "-1", "Retention size per partition (-1: none).", False),
        _key("log.retention.check.interval.ms", "long", "300000", "How often retention runs."),
        _key("log.index.interval.bytes", "int", "4096", "Bytes between offset index entries.", False),
        _key("log.index.size.max.bytes", "int", "10485760", "Maximum size of an index file.", False),
        _key("log.flush.interval.messages", "long", str(LONG_MAX), "Messages before a flush.", False),
        _key("log.flush.interval.ms", "long", None, "Time before a flush.", False),
        _key("log.flush.scheduler.interval.ms", "long", str(LONG_MAX), "How often flushing is checked."),
        _key("log.flush.offset.checkpoint.interval.ms", "int", "60000", "How often checkpoints are written."),
        _key("log.flush.start.offset.checkpoint.interval.ms", "int", "60000",
             "How often the log-start-offset checkpoint is written."),
        _key("log.message.timestamp.type", "string", "CreateTime", "CreateTime or LogAppendTime.", False),
        _key("log.message.timestamp.difference.max.ms", "long", str(LONG_MAX),
             "Allowed difference between record and broker time.", False),
        _key("log.message.timestamp.before.max.ms", "long", str(LONG_MAX),
             "Allowed age of a record timestamp.", False),
        _key("log.message.timestamp.after.max.ms", "long", str(LONG_MAX),
             "Allowed future skew of a record timestamp.", False),
        _key("log.cleanup.policy", "list", "delete", "delete and/or compact.", False),
        _key("log.cleaner.enable", "boolean", "true", "Run the log cleaner (compaction of compacted topics)."),
        _key("log.cleaner.threads", "int", "1", "Threads compacting logs."),
        _key("log.cleaner.backoff.ms", "long", "15000", "Sleep of the cleaner when no log needs cleaning."),
        _key("log.cleaner.dedupe.buffer.size", "long", "134217728",
             "Memory for the key map of all cleaner threads together."),
        _key("log.cleaner.io.buffer.load.factor", "double", "0.9", "Fill factor of the cleaner's key map."),
        _key("log.cleaner.io.buffer.size", "int", "524288", "I/O buffer memory of all cleaner threads."),
        _key("log.cleaner.min.compaction.lag.ms", "long", "0", "Age a record reaches before it may be compacted.",
             False),
        _key("log.cleaner.max.compaction.lag.ms", "long", str(LONG_MAX),
             "Age after which a record is compacted even below the dirty ratio.", False),
        _key("log.cleaner.delete.retention.ms", "long", "86400000", "How long tombstones are kept.", False),
        _key("log.cleaner.min.cleanable.ratio", "double", "0.5", "Dirty ratio that triggers cleaning.", False),
        _key("compression.type", "string", "producer", "Compression of stored batches.", False),
        _key("min.insync.replicas", "int", "1", "Replicas that must acknowledge acks=all.", False),
        _key("unclean.leader.election.enable", "boolean", "false", "Allow out-of-ISR leaders.", False),
        _key("replica.lag.time.max.ms", "long", "30000", "Followers behind longer leave the ISR."),
        _key("metadata.log.max.record.bytes.between.snapshots", "long", "20971520",
             "Metadata records replayed before the image is snapshotted and the log prefix dropped."),
        _key("metadata.log.max.snapshot.interval.ms", "long", "3600000",
             "Longest time between metadata snapshots while records arrive."),
        _key("replica.fetch.max.bytes", "int", "1048576", "Bytes a follower fetches per partition and request."),
        _key("replica.fetch.wait.max.ms", "int", "500", "How long a follower's fetch waits for new records."),
        _key("replica.fetch.backoff.ms", "int", "1000", "Pause after a failed follower fetch."),
        _key("replica.socket.timeout.ms", "int", "30000", "How long a follower waits for a leader's answer."),
        _key("replica.high.watermark.checkpoint.interval.ms", "long", "5000",
             "How often high watermarks are written to replication-offset-checkpoint."),
        _key("offsets.topic.num.partitions", "int", "50", "Partitions of __consumer_offsets."),
        _key("offsets.topic.replication.factor", "int", "1", "Replication factor of __consumer_offsets."),
        _key("offsets.retention.minutes", "int", "10080", "Retention of committed offsets."),
        _key("offsets.topic.segment.bytes", "int", "104857600", "Segment size of __consumer_offsets."),
        _key("offsets.topic.compression.codec", "int", "0",
             "Compression of offset and group records (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)."),
        _key("offsets.retention.check.interval.ms", "long", "600000", "How often expired offsets are removed."),
        _key("offsets.commit.timeout.ms", "int", "5000", "How long an offset commit may wait for its append."),
        _key("offset.metadata.max.bytes", "int", "4096", "Largest metadata string of a committed offset."),
        _key("group.initial.rebalance.delay.ms", "int", "3000", "Delay of a group's first rebalance."),
        _key("group.min.session.timeout.ms", "int", "6000", "Smallest session timeout a member may ask for."),
        _key("group.max.session.timeout.ms", "int", "1800000", "Largest session timeout a member may ask for."),
        _key("group.max.size", "int", "2147483647", "Most members a consumer group may have."),
        _key("group.share.record.lock.duration.ms", "int", "30000",
             "How long a share group's consumer holds an acquired record before it returns to the group."),
        _key("group.share.delivery.count.limit", "int", "5",
             "Deliveries of a record to a share group after which it is archived instead of released."),
        _key("group.share.partition.max.record.locks", "int", "2000",
             "Most records of one share-partition in flight at a time."),
        _key("group.share.session.timeout.ms", "int", "45000", "A share group member's session timeout."),
        _key("group.share.heartbeat.interval.ms", "int", "5000", "How often share group members heartbeat."),
        _key("group.share.max.size", "int", "200", "Most members a share group may have."),
        _key("share.auto.offset.reset", "string", "latest",
             "Where a share group starts on a partition it has no state for: latest or earliest "
             "(the default of the group config of the same name; Kafka has no broker key)."),
        _key("share.coordinator.state.topic.num.partitions", "int", "50", "Partitions of __share_group_state."),
        _key("share.coordinator.state.topic.replication.factor", "int", "1",
             "Replication factor of __share_group_state."),
        _key("share.coordinator.state.topic.min.isr", "int", "2",
             "min.insync.replicas of __share_group_state (capped to its replication factor)."),
        _key("share.coordinator.state.topic.segment.bytes", "int", "104857600",
             "Segment size of __share_group_state."),
        _key("group.consumer.session.timeout.ms", "int", "45000",
             "Session timeout of consumer-protocol (KIP-848) group members."),
        _key("group.consumer.min.session.timeout.ms", "int", "45000",
             "Smallest session timeout of consumer-protocol groups (broker default and per-group configs)."),
        _key("group.consumer.max.session.timeout.ms", "int", "60000",
             "Largest session timeout of consumer-protocol groups (broker default and per-group configs)."),
        _key("group.consumer.heartbeat.interval.ms", "int", "5000",
             "Heartbeat interval the coordinator gives consumer-protocol group members."),
        _key("group.consumer.min.heartbeat.interval.ms", "int", "5000",
             "Smallest heartbeat interval of consumer-protocol groups (broker default and per-group configs)."),
        _key("group.consumer.max.heartbeat.interval.ms", "int", "15000",
             "Largest heartbeat interval of consumer-protocol groups (broker default and per-group configs)."),
        _key("group.consumer.max.size", "int", "2147483647", "Most members a consumer-protocol group may have."),
        _key("group.consumer.assignors", "list", "uniform,range",
             "Server-side assignors of consumer-protocol groups (uniform, range); the first is the default."),
        _key("transaction.state.log.num.partitions", "int", "50", "Partitions of __transaction_state."),
        _key("transaction.state.log.replication.factor", "int", "3",
             "Replication factor of __transaction_state (capped to the brokers registered when it is created)."),
        _key("transaction.state.log.min.isr", "int", "2",
             "min.insync.replicas of __transaction_state (capped to its replication factor)."),
        _key("transaction.state.log.segment.bytes", "int", "104857600", "Segment size of __transaction_state."),
        _key("transaction.max.timeout.ms", "int", "900000", "Largest transaction.timeout.ms a producer may ask for."),
        _key("transaction.partition.verification.enable", "boolean", "true",
             "Partition leaders ask the transaction coordinator before a transaction's first write (KIP-890)."),
        _key("transaction.abort.timed.out.transaction.cleanup.interval.ms", "int", "10000",
             "How often transactions past their timeout are looked for and aborted."),
        _key("transactional.id.expiration.ms", "int", "604800000",
             "A transactional id with no transaction in progress and no update for this long is forgotten."),
        _key("transaction.remove.expired.transaction.cleanup.interval.ms", "int", "3600000",
             "How often expired transactional ids are looked for and removed."),
        _key("producer.id.expiration.ms", "int", "86400000", "Idle producer ids are forgotten after this."),
        _key("cluster.id", "string", None, "Cluster id (generated at first start when unset)."),
        _key("metrics.port", "int", "-1",
             "Port of the Prometheus endpoint (GET /metrics); -1 turns it off, 0 picks a free port."),
        _key("metrics.host", "string", None,
             "Interface of the Prometheus endpoint (unset: the first client listener's host; empty: every "
             "interface)."),
        _key("console.port", "int", "-1",
             "Port of the web console served by the broker (needs the console extra); -1 turns it off, 0 picks "
             "a free port."),
        _key("console.host", "string", None,
             "Interface of the web console (unset: the first client listener's host; empty: every interface)."),
        _key("console.read.only", "boolean", "false",
             "The broker's web console hides and refuses every action that changes the cluster."),
        _key("authorizer.class.name", "string", "",
             "The ACL authorizer (org.apache.kafka.metadata.authorizer.StandardAuthorizer); empty: no authorization."),
        _key("super.users", "string", "", "Principals every ACL check allows, separated by ';' (User:admin;User:ops)."),
        _key("allow.everyone.if.no.acl.found", "boolean", "false",
             "A resource no ACL applies to is open to everyone (otherwise only to super users)."),
        _key("quota.window.num", "int", "11", "Samples kept for client quota rates."),
        _key("quota.window.size.seconds", "int", "1", "Time span of each client quota sample."),
    )
}


# The embedded single node is a development broker: like the `server.properties` Kafka ships for
# development (and `gregor cluster start`), it lets a new group's first consumer in at once instead
# of holding the join 3 s for more members. Any node of a larger quorum keeps Kafka's defaults.
EMBEDDED_DEFAULTS: dict[str, str] = {"group.initial.rebalance.delay.ms": "0"}

SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}  # Kafka's ids


@dataclass(frozen=True)
class Endpoint:
    listener: str
    host: str
    port: int

    def __str__(self) -> str:
        return f"{self.listener}://{self.host}:{self.port}"


def is_secret(name: str) -> bool:
    """A key whose value must never be shown (Kafka prints `[hidden]`): password-type keys, also
    under a listener prefix, and JAAS configs, which hold passwords."""
    if name.endswith("sasl.jaas.config"):
        return True
    base = name.split(".", 3)[3] if name.lower().startswith("listener.name.") and name.count(".") >= 3 else name
    key = BROKER_CONFIG_KEYS.get(base)
    return key is not None and key.type == "password"


def parse_listeners(value: str, key: str) -> list[Endpoint]:
    """Parse `NAME://host:port,...` as Kafka does (empty host means all interfaces)."""
    endpoints = []
    for item in filter(None, (part.strip() for part in value.split(","))):
        name, sep, rest = item.partition("://")
        host, colon, port = rest.rpartition(":")
        if not sep or not colon or not port.isdigit() or not name:
            raise ConfigError(f"{key}: '{item}' is not NAME://host:port (e.g. PLAINTEXT://localhost:9092)")
        host = host.strip("[]")
        endpoints.append(Endpoint(name.upper(), host, int(port)))
    return endpoints


def _parse_value(key: ConfigKey, raw: str) -> object:
    text = raw.strip()
    try:
        if key.type == "boolean":
            if text.lower() not in ("true", "false"):
                raise ValueError
            return text.lower() == "true"
        if key.type in ("int", "long"):
            return int(text)
        if key.type == "double":
            return float(text)
    except ValueError:
        raise ConfigError(f"{key.name}: '{raw}' is not a valid {key.type}") from None
    if key.type == "list":
        return [part.strip() for part in text.split(",") if part.strip()]
    return text


def read_properties(path: str) -> dict[str, str]:
    """Read a Java-style .properties file (comments, `key=value` or `key: value`, continuations)."""
    properties: dict[str, str] = {}
    with open(path, encoding="utf-8") as handle:
        pending = ""
        for line_number, raw_line in enumerate(handle, 1):
            line = pending + raw_line.strip()
            pending = ""
            if not line or line[0] in "#!":
                continue
            if line.endswith("\\") and not line.endswith("\\\\"):
                pending = line[:-1]
                continue
            key, value = _split_property(line, path, line_number)
            properties[key] = value
        if pending:
            key, value = _split_property(pending, path, line_number)
            properties[key] = value
    return properties


def _split_property(line: str, path: str, line_number: int) -> tuple[str, str]:
    for index, char in enumerate(line):
        if char in "=:" or char.isspace():
            key = line[:index].strip()
            value = line[index + 1:].strip() if char in "=:" else line[index:].strip().lstrip("=:").strip()
            if key:
                return key, value
            break
    else:
        return line, ""
    raise ConfigError(f"{path}:{line_number}: no key before '=' in '{line}'")


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--override '{item}' is not key=value (e.g. --override num.partitions=3)")
        overrides[key.strip()] = value.strip()
    return overrides


class BrokerConfig:
    """Typed view over the broker's properties, with Kafka's defaults and derived values."""

    def __init__(self, properties: Mapping[str, str] | None = None) -> None:
        self.originals: dict[str, str] = dict(properties or {})
        self._values: dict[str, object] = {}
        for name, key in BROKER_CONFIG_KEYS.items():
            raw = self.originals.get(name, key.default)
            self._values[name] = None if raw is None else _parse_value(key, raw)
        if "broker.id" in self.originals and "node.id" not in self.originals:
            self._values["node.id"] = self._values["broker.id"]
        self.listeners = parse_listeners(",".join(self.get("listeners")), "listeners")
        advertised = self.get("advertised.listeners")
        self.advertised_listeners = (
            parse_listeners(",".join(advertised), "advertised.listeners") if advertised else self.listeners
        )
        self._inter_broker_listener = self._find_inter_broker_listener()
        self._validate()
        if self.embedded:
            for name, raw in EMBEDDED_DEFAULTS.items():
                if name not in self.originals:
                    self._values[name] = _parse_value(BROKER_CONFIG_KEYS[name], raw)

    def _validate(self) -> None:
        self._validate_security()
        authorizer = self.get("authorizer.class.name")
        if authorizer and authorizer != STANDARD_AUTHORIZER:
            raise ConfigError(f"authorizer.class.name: Gregor does not know {authorizer}; use "
                              f"{STANDARD_AUTHORIZER} or leave it empty for no authorization")
        for name in ("quota.window.num", "quota.window.size.seconds"):
            if self.get(name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {self.get(name)}")
        roles = self.process_roles
        if not roles or not roles <= {"broker", "controller"}:
            raise ConfigError(f"process.roles: must be broker, controller or both, got {','.join(sorted(roles))}")
        self._validate_quorum_bootstrap(roles)
        if "broker" in roles and not self.client_listeners():
            raise ConfigError("listeners: no client listener (e.g. PLAINTEXT://localhost:9092)")
        if roles == {"controller"}:
            if not self.controller_listeners():
                raise ConfigError("listeners: a controller needs a listener named in controller.listener.names "
                                  "(e.g. CONTROLLER://localhost:9093)")
            if self.node_id not in self.quorum_voters():
                raise ConfigError(f"controller.quorum.voters: a controller must be a voter, and node.id "
                                  f"{self.node_id} is not among {','.join(self.get('controller.quorum.voters'))}")
        elif roles == {"broker"}:
            if not self.quorum_voters():
                raise ConfigError("controller.quorum.voters: a broker-only node (process.roles=broker) needs the "
                                  "controller quorum's voters (e.g. 1@localhost:9093)")
            if self.node_id in self.quorum_voters():
                raise ConfigError(f"node.id: {self.node_id} is a voter of controller.quorum.voters; a broker-only "
                                  f"node needs an id of its own")
            if self.inter_broker_listener not in {e.listener for e in self.client_listeners()}:
                raise ConfigError(f"inter.broker.listener.name: {self.inter_broker_listener} is not one of the "
                                  f"listeners")
        elif self.combined_quorum:
            if self.node_id not in self.quorum_voters():
                raise ConfigError(f"controller.quorum.voters: a broker,controller node must be a voter, and node.id "
                                  f"{self.node_id} is not among {','.join(self.get('controller.quorum.voters'))}")
            if not self.controller_listeners():
                raise ConfigError("listeners: a broker,controller node of a quorum needs a listener named in "
                                  "controller.listener.names (e.g. CONTROLLER://localhost:9093)")
            if self.inter_broker_listener not in {e.listener for e in self.client_listeners()}:
                raise ConfigError(f"inter.broker.listener.name: {self.inter_broker_listener} is not one of the "
                                  f"listeners")
        for name in ("max.connections", "max.connections.per.ip", "max.connection.creation.rate"):
            if self.get(name) < 0:
                raise ConfigError(f"{name}: must be at least 0, got {self.get(name)}")
        self.connection_limits()
        for name in ("num.partitions", "default.replication.factor", "message.max.bytes",
                     "socket.request.max.bytes", "log.segment.bytes", "offsets.topic.num.partitions"):
            if self.get(name) < 1:
                raise ConfigError(f"{name}: must be at least 1, got {self.get(name)}")
        self._validate_share_groups()
        if self.get("log.message.timestamp.type") not in ("CreateTime", "LogAppendTime"):
            raise ConfigError("log.message.timestamp.type: must be CreateTime or LogAppendTime")
        try:
            consumer_assignors(",".join(self.get("group.consumer.assignors")))
        except ValueError as error:
            raise ConfigError(str(error)) from None
        limits = consumer_limit_error({name: self.get(name) for name in CONSUMER_LIMIT_DEFAULTS})
        if limits:
            raise ConfigError(limits)
        self._validate_console()
        self._validate_peer_security()

    def _validate_quorum_bootstrap(self, roles: set[str]) -> None:
        from gregor.broker.quorum_bootstrap import parse_bootstrap_servers, standalone_refusal

        controllers = self.controller_listener_names()
        own = [e for e in (*self.listeners, *self.advertised_listeners) if e.listener in controllers]
        try:
            refusal = standalone_refusal(parse_bootstrap_servers(self.get("controller.quorum.bootstrap.servers")),
                                         roles, bool(self.get("controller.quorum.voters")), own)
        except ValueError as error:
            raise ConfigError(str(error)) from None
        if refusal:
            raise ConfigError(f"controller.quorum.bootstrap.servers: {refusal}")

    def _validate_peer_security(self) -> None:
        """How this node's own connections to other nodes are secured (`peer_security`)."""
        from gregor.broker.security.listener_security import SecurityConfigError, peer_security

        try:
            self.peer_security = peer_security(self)
        except SecurityConfigError as error:
            raise ConfigError(str(error)) from None

    def _validate_share_groups(self) -> None:
        bounds = {"group.share.record.lock.duration.ms": (1000, 3600000), "group.share.delivery.count.limit": (2, 10),
                  "group.share.partition.max.record.locks": (100, 10000), "group.share.session.timeout.ms": (1000, None),
                  "group.share.heartbeat.interval.ms": (100, None), "group.share.max.size": (1, 1000),
                  "share.coordinator.state.topic.num.partitions": (1, None),
                  "share.coordinator.state.topic.replication.factor": (1, None),
                  "share.coordinator.state.topic.min.isr": (1, None)}
        for name, (low, high) in bounds.items():
            value = self.get(name)
            if value < low or (high is not None and value > high):
                raise ConfigError(f"{name}: must be between {low} and {high}, got {value}" if high is not None
                                  else f"{name}: must be at least {low}, got {value}")
        if self.get("share.auto.offset.reset") not in ("latest", "earliest"):
            raise ConfigError(f"share.auto.offset.reset: must be latest or earliest, got {self.get('share.auto.offset.reset')}")

    def _validate_console(self) -> None:
        """A console that cannot be served is refused, never silently left out."""
        port = self.get("console.port")
        if not -1 <= port <= 65535:
            raise ConfigError(f"console.port: must be -1 (off) or 0..65535, got {port}")
        if port >= 0 and "broker" not in self.process_roles:
            raise ConfigError("console.port: a controller-only node has no client listener to serve the web "
                              "console for; set it on a broker")

    def _validate_security(self) -> None:
        """Every listener must map to a security protocol, and its TLS and SASL keys must be ones
        Gregor honours (`listener_security`): a secured listener is never served weaker."""
        from gregor.broker.security.listener_security import SecurityConfigError, resolve_all

        for endpoint in [*self.listeners, *self.advertised_listeners]:
            protocol = self.security_protocol(endpoint.listener)
            if protocol not in SECURITY_PROTOCOLS:
                raise ConfigError(f"listener.security.protocol.map: no security protocol defined for listener "
                                  f"{endpoint.listener} (map it, e.g. {endpoint.listener}:PLAINTEXT)")
        try:
            self.listener_security = resolve_all(self)
        except SecurityConfigError as error:
            raise ConfigError(str(error)) from None

    def get(self, name: str):
        return self._values[name]

    def socket_buffers(self, listener: str) -> SocketBuffers:
        """The listener's `socket.send.buffer.bytes` / `socket.receive.buffer.bytes`."""
        send, receive = (self.listener_value(listener, f"socket.{name}.buffer.bytes") for name in ("send", "receive"))
        assert isinstance(send, int) and isinstance(receive, int)
        return SocketBuffers(send, receive)

    def listener_value(self, listener: str, name: str) -> object:
        """A key as one listener sees it: `listener.name.<listener>.<name>` (Kafka's per-listener
        override, listener name in lower case) if set, else the global value."""
        prefixed = f"listener.name.{listener.lower()}.{name}"
        for original, raw in self.originals.items():
            if original.lower() == prefixed:
                key = BROKER_CONFIG_KEYS.get(name)
                return _parse_value(key, raw) if key is not None else raw.strip()
        return self.get(name) if name in BROKER_CONFIG_KEYS else None

    def default(self, name: str) -> str | None:
        """The value a key has when it is not set: Kafka's, except for the embedded single
        node's development defaults (EMBEDDED_DEFAULTS)."""
        if self.embedded and name in EMBEDDED_DEFAULTS:
            return EMBEDDED_DEFAULTS[name]
        return BROKER_CONFIG_KEYS[name].default

    @property
    def node_id(self) -> int:
        return self.get("node.id")

    @property
    def log_dirs(self) -> list[str]:
        dirs = self.get("log.dirs") if "log.dirs" in self.originals or "log.dir" not in self.originals \
            else [self.get("log.dir")]
        return [os.path.abspath(d) for d in dirs]

    @property
    def metadata_log_dir(self) -> str:
        explicit = self.get("metadata.log.dir")
        return os.path.abspath(explicit) if explicit else self.log_dirs[0]

    @property
    def process_roles(self) -> set[str]:
        return {role.strip().lower() for role in self.get("process.roles") if role.strip()}

    def quorum_voters(self) -> dict[int, tuple[str, int]]:
        """`controller.quorum.voters` (`id@host:port,...`) as node id -> address."""
        voters: dict[int, tuple[str, int]] = {}
        for item in self.get("controller.quorum.voters"):
            node, at, address = item.strip().partition("@")
            host, colon, port = address.rpartition(":")
            if not at or not colon or not node.isdigit() or not port.isdigit() or not host:
                raise ConfigError(f"controller.quorum.voters: '{item}' is not id@host:port (e.g. 1@localhost:9093)")
            if int(node) in voters:
                raise ConfigError(f"controller.quorum.voters: node {node} is listed twice")
            voters[int(node)] = (host.strip("[]"), int(port))
        return voters

    def controller_listeners(self) -> list[Endpoint]:
        controllers = self.controller_listener_names()
        return [e for e in self.listeners if e.listener in controllers]

    def controller_listener_names(self) -> set[str]:
        return {name.upper() for name in self.get("controller.listener.names")}

    def client_listeners(self) -> list[Endpoint]:
        controllers = self.controller_listener_names()
        return [e for e in self.listeners if e.listener not in controllers]

    @property
    def combined_quorum(self) -> bool:
        """A broker,controller node that is one voter of a multi-voter quorum (not the embedded
        single-node mode, whose one-voter quorum commits in process)."""
        return self.process_roles == {"broker", "controller"} and len(self.quorum_voters()) > 1

    @property
    def embedded(self) -> bool:
        """The single-node mode `gregor server` starts with no process.roles override: broker and
        controller in one process, a one-voter quorum that commits in process."""
        return self.process_roles == {"broker", "controller"} and not self.combined_quorum

    @property
    def inter_broker_listener(self) -> str:
        """The listener followers fetch from leaders on: `inter.broker.listener.name`, else the
        first client listener (found once: every follower fetch asks, on both sides)."""
        return self._inter_broker_listener

    def _find_inter_broker_listener(self) -> str:
        name = self.get("inter.broker.listener.name")
        if name:
            return name.upper()
        listeners = self.client_listeners()
        return listeners[0].listener if listeners else ""

    @property
    def metrics_host(self) -> str:
        """Where the Prometheus endpoint listens: `metrics.host`, else the host of the first client
        listener, so that a broker on localhost does not expose its metrics on every interface
        (an empty host means every interface, as in `listeners`)."""
        return self._host_or_first_listener("metrics.host")

    @property
    def console_host(self) -> str:
        """Where the web console listens: `console.host`, else the host of the first client listener
        (the console has no login of its own, so it is no more reachable than the broker)."""
        return self._host_or_first_listener("console.host")

    def _host_or_first_listener(self, key: str) -> str:
        host = self.get(key)
        if host is not None:
            return host
        listeners = self.client_listeners()
        return listeners[0].host if listeners else ""

    def advertised_client_listeners(self) -> list[Endpoint]:
        controllers = self.controller_listener_names()
        advertised = [e for e in self.advertised_listeners if e.listener not in controllers]
        return [
            Endpoint(e.listener, e.host or "localhost", e.port) for e in advertised
        ]

    def connection_limits(self) -> ConnectionLimits:
        """The listeners' connection limits (max.connections*, connections.max.idle.ms)."""
        overrides = {}
        for item in filter(None, (part.strip() for part in self.get("max.connections.per.ip.overrides").split(","))):
            address, _, count = item.rpartition(":")
            if not address or not count.strip().isdigit():
                raise ConfigError(f"max.connections.per.ip.overrides: '{item}' is not address:count "
                                  f"(e.g. 127.0.0.1:100)")
            overrides[address.strip().strip("[]")] = int(count)
        return ConnectionLimits(self.get("max.connections"), self.get("max.connections.per.ip"), overrides,
                                self.get("connections.max.idle.ms"))

    @property
    def super_users(self) -> frozenset[str]:
        return frozenset(user.strip() for user in self.get("super.users").split(";") if user.strip())

    def security_protocol(self, listener: str) -> str:
        """The security protocol of a listener per `listener.security.protocol.map`; a listener
        named after a protocol needs no entry, as in Kafka's default map."""
        for item in self.get("listener.security.protocol.map").split(","):
            name, _, protocol = item.partition(":")
            if name.strip().upper() == listener:
                return protocol.strip().upper()
        return listener


def load_config(path: str | None, overrides: Mapping[str, str],
                reader: Callable[[str], dict[str, str]] = read_properties) -> BrokerConfig:
    properties = reader(path) if path else {}
    properties.update(overrides)
    return BrokerConfig(properties)
