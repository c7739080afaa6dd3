"""Configuration of the network core: Kafka's keys, Kafka's defaults, checked once.

Clients take a dict of Kafka configuration keys (`bootstrap.servers`, `request.timeout.ms`, ...)
and the same keys as keyword arguments with underscores (`bootstrap_servers=`). `merge_config`
joins both and refuses unknown keys, naming them; `NetworkSettings.from_config` reads the keys
of this module. Each client (admin, producer, consumer) passes its own table of allowed keys,
which includes `NETWORK_DEFAULTS`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

DEFAULT_PORT = 9092

NETWORK_DEFAULTS: dict[str, Any] = {
    "bootstrap.servers": None,
    "client.id": "gregor",
    "request.timeout.ms": 30_000,
    "reconnect.backoff.ms": 50,
    "reconnect.backoff.max.ms": 1_000,
    "socket.connection.setup.timeout.ms": 10_000,
    "socket.connection.setup.timeout.max.ms": 30_000,
    "metadata.max.age.ms": 300_000,
    "retry.backoff.ms": 100,
    "retry.backoff.max.ms": 1_000,
}


def merge_config(config: Mapping[str, Any] | None, kwargs: Mapping[str, Any],
                 allowed: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults from `allowed`, then `config`, then keyword arguments (underscores read as dots).

    Raises ValueError naming the first key that is not in `allowed`.
    """
    merged = dict(allowed)
    given = dict(config or {})
    given.update({key.replace("_", "."): value for key, value in kwargs.items()})
    for key, value in given.items():
        if key not in allowed:
            raise ValueError(f"unknown configuration key {key!r}")
        merged[key] = value
    return merged


def parse_bootstrap_servers(value: str | list[str] | tuple[str, ...] | None) -> tuple[tuple[str, int], ...]:
    """`host:port` pairs from a comma list (or a list); `[v6addr]:port`; the port defaults to 9092."""
    if value is None:
        raise ValueError("bootstrap.servers is required")
    items = value.split(",") if isinstance(value, str) else list(value)
    servers = []
    for item in (entry.strip() for entry in items):
        if not item:
            continue
        host, port = _split_host_port(item)
        servers.append((host, port))
    if not servers:
        raise ValueError("bootstrap.servers names no server")
    return tuple(servers)


def _split_host_port(item: str) -> tuple[str, int]:
    if "://" in item:
        item = item.split("://", 1)[1]
    if item.startswith("["):
        host, _, rest = item[1:].partition("]")
        port_text = rest.lstrip(":")
    elif item.count(":") == 1:
        host, port_text = item.split(":")
    else:
        host, port_text = item, ""
    try:
        port = int(port_text) if port_text else DEFAULT_PORT
    except ValueError:
        raise ValueError(f"bootstrap.servers entry {item!r} has an invalid port") from None
    if not host or not 0 < port < 65536:
        raise ValueError(f"bootstrap.servers entry {item!r} is not host:port")
    return host, port


def _milliseconds(config: Mapping[str, Any], key: str) -> int:
    try:
        value = int(config[key])
    except (TypeError, ValueError):
        raise ValueError(f"{key} must be an integer number of milliseconds, not {config[key]!r}") from None
    if value < 0:
        raise ValueError(f"{key} must not be negative")
    return value


@dataclass(frozen=True)
class NetworkSettings:
    """The network core's view of a client configuration (times in milliseconds)."""

    bootstrap_servers: tuple[tuple[str, int], ...]
    client_id: str = "gregor"
    request_timeout_ms: int = 30_000
    reconnect_backoff_ms: int = 50
    reconnect_backoff_max_ms: int = 1_000
    socket_connection_setup_timeout_ms: int = 10_000
    socket_connection_setup_timeout_max_ms: int = 30_000
    metadata_max_age_ms: int = 300_000
    retry_backoff_ms: int = 100
    retry_backoff_max_ms: int = 1_000

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> NetworkSettings:
        """Read the network keys of a merged config (see `merge_config`)."""
        return cls(
            bootstrap_servers=parse_bootstrap_servers(config.get("bootstrap.servers")),
            client_id=str(config.get("client.id", NETWORK_DEFAULTS["client.id"])),
            **{key.replace(".", "_"): _milliseconds(config, key)
               for key in NETWORK_DEFAULTS if key.endswith(".ms") and key in config},
        )
