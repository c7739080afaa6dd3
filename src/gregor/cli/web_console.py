"""`gregor console`: serve the web console (gregor.console) for a cluster's operators."""

from __future__ import annotations

import argparse
import ipaddress
import socket

from gregor.cli.common import (
    ToolError, UsageError, add_connection_options, add_tool, client_config, guarded, timeout_ms_of,
)

EXTRA = "pip install 'gregor-streaming[console]'"
LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")

EPILOG = """examples:
  gregor console --bootstrap-server localhost:9092
  gregor console --bootstrap-server kafka1:9092,kafka2:9092 --port 9000 --host 0.0.0.0 --read-only
  gregor console --bootstrap-server broker:9092 --command-config client.properties --timeout 10000

Open the printed address in a browser. The console has no login of its own: it listens on
127.0.0.1 unless --host says otherwise; use --read-only where others can reach it. It works
against any Kafka-compatible cluster (Gregor, tansu, Apache Kafka) through Gregor's client.
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "console", "serve the web console for operators",
                      "Serve a web console: brokers, partitions, topics, messages, consumer groups and lag, "
                      "with live charts. Needs the console extra (" + EXTRA + ").", EPILOG)
    add_connection_options(parser)
    parser.add_argument("--port", type=int, default=8080, help="the HTTP port (default 8080; 0 picks a free one)")
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    parser.add_argument("--read-only", action="store_true",
                        help="hide and refuse every action that changes the cluster")
    parser.add_argument("--sample-interval", type=float, default=5.0, metavar="SECONDS",
                        help="how often offsets are sampled for the charts and broker states (default 5)")
    parser.add_argument("--history", type=float, default=900.0, metavar="SECONDS",
                        help="how far back the charts go (default 900)")
    parser.set_defaults(run=run)


def _missing_extra() -> str | None:
    """The first web package of the console extra that cannot be imported, or None."""
    try:
        import jinja2  # noqa: F401
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as error:
        return error.name or str(error)
    return None


@guarded("console")
def run(args: argparse.Namespace) -> int:
    missing = _missing_extra()
    if missing is not None:
        raise ToolError(f"the web console needs the console extra: {EXTRA} (missing: {missing})")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0..65535, got {args.port}")
    if args.sample_interval <= 0 or args.history <= 0:
        raise UsageError("--sample-interval and --history must be positive numbers of seconds")
    config = client_config(args)
    timeout_s = timeout_ms_of(args, config) / 1000
    del config["default.api.timeout.ms"]
    del config["bootstrap.servers"]
    listener = _listen(args.host, args.port)

    import uvicorn

    from gregor.console.app import create_app
    from gregor.console.services import ConsoleSettings

    settings = ConsoleSettings(bootstrap=args.bootstrap_server, client_config=config, read_only=args.read_only,
                               sample_interval_s=args.sample_interval, history_s=args.history, timeout_s=timeout_s,
                               allowed_hosts=_allowed_hosts(args.host))
    try:
        app = create_app(settings)  # makes the clients: a bad client config fails here, before the banner
    except BaseException:
        listener.close()
        raise
    host, port = listener.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    print(f"Gregor console at http://{shown}:{port}/ for the cluster at {args.bootstrap_server}"
          + (" (read-only)" if args.read_only else ""), flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
    server.run(sockets=[listener])
    return 0


def _allowed_hosts(host: str) -> tuple[str, ...]:
    """Listening on a loopback address, only loopback names in the Host header (no DNS
    rebinding); elsewhere any (the operator chose who can reach it)."""
    try:
        loopback = ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = host == "localhost"
    if not loopback:
        return ("*",)
    return tuple(dict.fromkeys(LOOPBACK_NAMES + (f"[{host}]" if ":" in host else host,)))


def _listen(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so that a port in use is one clear line, not a log."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
    except OSError as error:
        listener.close()
        raise ToolError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    listener.listen(128)
    listener.set_inheritable(True)
    return listener
