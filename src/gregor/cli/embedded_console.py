"""The web console served by `gregor server` itself (`console.port`), on the broker's event loop,
for the cluster at this broker's first client listener. Imported only when the console extra is
installed (gregor.cli.server checks it first)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import Iterator

import uvicorn

from gregor.broker.config import BrokerConfig
from gregor.cli.console_serving import console_settings, listen, url_of
from gregor.console.app import create_app

SHUTDOWN_GRACE_S = 5
"""How long the console's open requests may run on at shutdown before their connections close."""


def bootstrap_of(host: str, port: int) -> str:
    """This broker's client listener as a bootstrap address: a wildcard host is reached on loopback."""
    if host in ("", "0.0.0.0"):
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class EmbeddedConsole:
    """The console's listening socket, bound before the broker starts (a busy port is one line
    and exit 1), and its uvicorn server, a task of the broker's loop once the broker serves."""

    def __init__(self, config: BrokerConfig) -> None:
        self._config = config
        self._host = config.console_host
        self._listener: socket.socket | None = listen(self._host, config.get("console.port"))
        self._server: uvicorn.Server | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self, client_port: int) -> str:
        """Serve the console for the cluster at the broker's first client listener, bound on
        `client_port`; returns the log line that names the console's address."""
        assert self._listener is not None, "an embedded console starts once"
        bootstrap = bootstrap_of(self._config.client_listeners()[0].host, client_port)
        read_only = self._config.get("console.read.only")
        settings = console_settings(bootstrap, self._host, read_only)
        # The console's clients are blocking: made on the loop, they would wait on this very broker.
        app = await asyncio.to_thread(create_app, settings)
        config = uvicorn.Config(app, log_config=None, log_level="warning", access_log=False, lifespan="on",
                                timeout_graceful_shutdown=SHUTDOWN_GRACE_S)
        self._server = BrokerOwnedServer(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[self._listener]), name="web-console")
        return (f"Web console at {url_of(self._listener)} for the cluster at {bootstrap}"
                + (" (read-only)" if read_only else ""))

    async def stop(self) -> None:
        """Stop serving, close the console's clients, then the socket; before the broker stops,
        so that the clients leave while it still answers."""
        if self._server is not None and self._task is not None:
            self._server.should_exit = True
            await self._task
        self.close()

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None


class BrokerOwnedServer(uvicorn.Server):
    """Signals belong to the broker, which stops the console itself: uvicorn's own handlers would
    replace the broker's and raise SIGTERM again once the console is done."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield
