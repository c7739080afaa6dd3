"""The network core's settings: the Kafka configuration keys it reads, with Kafka's defaults.

Clients parse and check their whole configuration with `gregor.client.config.parse_config`
(one table of keys per role, unknown keys refused by name); `NetworkSettings.from_config` then
picks the keys of the network core out of the result.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from gregor.client.network.security import ClientSecurity

DEFAULT_PORT = 9092


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
    security: ClientSecurity = field(default_factory=ClientSecurity)
    to_controllers: bool = False  # bootstrapped from `bootstrap.controllers`: the nodes are the controllers

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> NetworkSettings:
        """The network keys of a parsed client config; keys it lacks keep Kafka's defaults."""
        times = {}
        for setting in fields(cls):
            key = setting.name.replace("_", ".")
            if key.endswith(".ms") and key in config:
                times[setting.name] = int(config[key])
        controllers = config.get("bootstrap.controllers")
        return cls(bootstrap_servers=parse_bootstrap_servers(controllers or config.get("bootstrap.servers")),
                   client_id=str(config.get("client.id") or cls.client_id),
                   security=ClientSecurity.from_config(config), to_controllers=bool(controllers), **times)
