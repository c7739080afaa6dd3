"""Which broker keys may change while the broker runs, per listener: the key and trust stores
(Kafka's SslConfigs.RECONFIGURABLE_CONFIGS), set as `listener.name.<listener>.<key>` on a broker
resource with (Incremental)AlterConfigs. The controller checks the names; the broker the stores
(`gregor.broker.security.listener_tls`), since only it can read its files."""

from __future__ import annotations

import re

from gregor.metadata.topic_configs import validate_broker_log_config

RECONFIGURABLE_SSL_KEYS = frozenset({
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
})
_LISTENER_KEY = re.compile(r"listener\.name\.([^.]+)\.(.+)")


def listener_ssl_key(name: str) -> tuple[str, str] | None:
    """(listener in upper case, ssl key) of a reconfigurable per-listener key, else None."""
    match = _LISTENER_KEY.fullmatch(name)
    if match is None or match.group(2) not in RECONFIGURABLE_SSL_KEYS:
        return None
    return match.group(1).upper(), match.group(2)


def validate_dynamic_broker_config(name: str, value: str | None) -> str | None:
    """Why a dynamic broker key cannot be set (None when it can): a listener's stores, or the
    broker synonym of a topic config."""
    if listener_ssl_key(name) is not None:
        return None
    if name in RECONFIGURABLE_SSL_KEYS:
        return (f"Cannot update broker config {name} dynamically without a listener prefix; set "
                f"listener.name.<listener>.{name}")
    return validate_broker_log_config(name, value)
