"""`controller.quorum.bootstrap.servers` (KIP-853), as far as Gregor can honour it.

Kafka 4's own quickstart names the controllers to bootstrap from instead of the voters
(`controller.quorum.bootstrap.servers=localhost:9093`, storage formatted `--standalone`): a dynamic
quorum whose voter set lives in the metadata log. Gregor's voters are static. The one dynamic
quorum it can run is the one `--standalone` makes: a broker,controller node bootstrapping from its
own controller listener only, which is Gregor's embedded one-voter quorum. Anything else is refused
at start. As in Kafka, when `controller.quorum.voters` is set too, the voters are the quorum and
the bootstrap servers are not used.
"""

from __future__ import annotations

from typing import Iterable, Protocol

DYNAMIC_QUORUM_REFUSAL = ("dynamic quorums (KIP-853) are not supported: name the voters in "
                          "controller.quorum.voters")
_WILDCARD_HOSTS = frozenset({"", "0.0.0.0", "::", "[::]"})
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


class Address(Protocol):
    """A listener endpoint's host and port (the config's `Endpoint`)."""

    @property
    def host(self) -> str: ...

    @property
    def port(self) -> int: ...


def parse_bootstrap_servers(entries: Iterable[str]) -> list[tuple[str, int]]:
    """`host:port,...` as (host, port) pairs; ValueError names an entry that is not host:port."""
    servers = []
    for entry in entries:
        host, colon, port = entry.strip().rpartition(":")
        if not colon or not host or not port.isdigit():
            raise ValueError(f"controller.quorum.bootstrap.servers: '{entry.strip()}' is not host:port "
                             f"(e.g. localhost:9093)")
        servers.append((host.strip("[]").lower(), int(port)))
    return servers


def standalone_refusal(bootstrap_servers: list[tuple[str, int]], roles: set[str], voters_set: bool,
                       controller_listeners: Iterable[Address]) -> str | None:
    """Why this node cannot start with these bootstrap servers, None when it can: with voters set
    they are unused; else only a broker,controller node naming its own controller listener(s)."""
    if voters_set or not bootstrap_servers:
        return None
    if roles != {"broker", "controller"}:
        return DYNAMIC_QUORUM_REFUSAL
    own = list(controller_listeners)
    if not own or not all(_is_own(server, own) for server in bootstrap_servers):
        return DYNAMIC_QUORUM_REFUSAL
    return None


def _is_own(server: tuple[str, int], listeners: list[Address]) -> bool:
    host, port = server
    for listener in listeners:
        listener_host = listener.host.strip("[]").lower()
        if listener.port == port and (host == listener_host or (
                listener_host in _WILDCARD_HOSTS | _LOCAL_HOSTS and host in _LOCAL_HOSTS)):
            return True
    return False
