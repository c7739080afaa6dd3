"""What `gregor console` and a broker with `console.port` share to serve the web console: the
extra check, the listening socket, the Host header rule and the console's settings."""

from __future__ import annotations

import ipaddress
import socket
from typing import TYPE_CHECKING, Any

from gregor.cli.common import ToolError

if TYPE_CHECKING:
    from gregor.console.services import ConsoleSettings

EXTRA = "pip install 'gregor-streaming[console]'"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def missing_extra() -> str | None:
    """The first web package of the console extra that cannot be imported, or None."""
    try:
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as error:
        return error.name or str(error)
    return None


def missing_extra_message(missing: str) -> str:
    return f"the web console needs the console extra: {EXTRA} (missing: {missing})"


def allowed_hosts(host: str) -> tuple[str, ...]:
    """Listening on a loopback address, only loopback names in the Host header (no DNS
    rebinding); elsewhere any (the operator chose who can reach it)."""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        return ("*",)
    return tuple(dict.fromkeys(LOOPBACK_NAMES + (f"[{host}]" if ":" in host else host,)))


def listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a port in use is one clear line, not a log.
    An empty host means every interface, as in Kafka's `listeners`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as error:
        listener.close()
        raise ToolError(f"cannot listen on {host or '0.0.0.0'}:{port}: {error.strerror or error}") from None
    listener.listen(128)
    listener.set_inheritable(True)
    return listener


def url_of(listener: socket.socket) -> str:
    """The console's address as a browser takes it (the real port when 0 was asked for)."""
    host, port = listener.getsockname()[:2]
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/"


def console_settings(bootstrap: str, host: str, read_only: bool, client_config: dict[str, Any] | None = None,
                     **tuning: Any) -> ConsoleSettings:
    """The console's settings for the cluster at `bootstrap`, served on `host`; `tuning` holds
    ConsoleSettings' sample_interval_s, history_s and timeout_s where the caller sets them."""
    from gregor.console.services import ConsoleSettings

    return ConsoleSettings(bootstrap=bootstrap, client_config=dict(client_config or {}), read_only=read_only,
                           allowed_hosts=allowed_hosts(host), **tuning)
