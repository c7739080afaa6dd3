"""The `/metrics` endpoint, served by the broker's event loop (no thread, so scrapes read the
broker's state without racing its updates). HTTP/1.1, one request per connection."""

from __future__ import annotations

import asyncio
import logging

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

log = logging.getLogger("gregor.metrics")
MAX_REQUEST_LINE = 8192
READ_TIMEOUT_S = 10


class MetricsServer:
    def __init__(self, registry: CollectorRegistry) -> None:
        self._registry = registry
        self._server: asyncio.base_events.Server | None = None

    async def listen(self, host: str, port: int) -> int:
        self._server = await asyncio.start_server(self._serve, host or None, port, reuse_address=True)
        return self._server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request_line = await asyncio.wait_for(reader.readline(), READ_TIMEOUT_S)
            while (await asyncio.wait_for(reader.readline(), READ_TIMEOUT_S)) not in (b"\r\n", b"\n", b""):
                pass
            parts = request_line[:MAX_REQUEST_LINE].decode("latin-1").split()
            if len(parts) < 2 or parts[0] not in ("GET", "HEAD"):
                status, body, content_type = "405 Method Not Allowed", b"use GET /metrics\n", "text/plain"
            elif parts[1].split("?")[0] not in ("/metrics", "/"):
                status, body, content_type = "404 Not Found", b"metrics are at /metrics\n", "text/plain"
            else:
                status, body, content_type = "200 OK", generate_latest(self._registry), CONTENT_TYPE_LATEST
            head = (f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {len(body)}\r\n"
                    f"Connection: close\r\n\r\n").encode("latin-1")
            writer.write(head if parts and parts[0] == "HEAD" else head + body)
            await writer.drain()
        except (asyncio.TimeoutError, ConnectionError, UnicodeDecodeError) as error:
            log.debug("metrics request failed: %s", error)
        finally:
            writer.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
