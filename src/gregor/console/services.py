"""The console's settings and the clients behind its pages, made once and closed at shutdown."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gregor.client import AdminClient
from gregor.console.brokers import BrokerRegistry
from gregor.console.content import DEFAULT_LIMIT
from gregor.console.inspector import Inspector
from gregor.console.records import RecordProducer, RecordReader
from gregor.console.sampler import Sampler


@dataclass(frozen=True)
class ConsoleSettings:
    bootstrap: str
    client_config: dict[str, Any] = field(default_factory=dict)
    """Kafka client keys (security settings included); bootstrap.servers is set from `bootstrap`."""
    read_only: bool = False
    sample_interval_s: float = 5.0
    history_s: float = 900.0
    timeout_s: float = 5.0
    """How long one page waits for the cluster (default.api.timeout.ms of the console's clients)."""
    value_limit: int = DEFAULT_LIMIT
    """Bytes of a key, value or header shown in the page; the rest is a download."""
    refresh_s: float = 3.0
    """How often the live parts of a page (status, brokers, tables) are refreshed in the browser."""
    allowed_hosts: tuple[str, ...] = ("*",)
    """Host header values served; a console on a loopback address serves only loopback names, so
    that a site whose name was rebound to 127.0.0.1 (DNS rebinding) cannot read it."""

    def client(self) -> dict[str, Any]:
        """The settings every client of the console gets (the producer takes no api timeout)."""
        return {**self.client_config, "bootstrap.servers": self.bootstrap}

    def reader(self) -> dict[str, Any]:
        """The admin client's and the browsing consumer's: a page waits at most `timeout_s`."""
        return {**self.client(), "default.api.timeout.ms": int(self.timeout_s * 1000)}


class ConsoleServices:
    """The AdminClient, the sampler and the record reader/producer the pages share."""

    def __init__(self, settings: ConsoleSettings) -> None:
        self.settings = settings
        config = settings.reader()
        self.admin = AdminClient({**config, "client.id": "gregor-console-admin"})
        self.registry = BrokerRegistry()
        self.inspector = Inspector(self.admin, self.registry)
        self.sampler = Sampler(self.inspector, settings.sample_interval_s, settings.history_s)
        self.reader = RecordReader(config, self.inspector, settings.timeout_s)
        self.producer = RecordProducer(settings.client(), settings.timeout_s)

    def start(self) -> None:
        self.sampler.start()

    def close(self) -> None:
        self.sampler.stop()
        self.producer.close()
        self.admin.close(self.settings.timeout_s)
