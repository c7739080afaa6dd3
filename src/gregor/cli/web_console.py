"""`gregor console`: serve the web console (gregor.console) for a cluster's operators."""

from __future__ import annotations

import argparse

from gregor.cli.common import (
    ToolError, UsageError, add_connection_options, add_tool, client_config, guarded, timeout_ms_of,
)
from gregor.cli.console_serving import EXTRA, console_settings, listen, missing_extra, missing_extra_message, url_of

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


@guarded("console")
def run(args: argparse.Namespace) -> int:
    missing = missing_extra()
    if missing is not None:
        raise ToolError(missing_extra_message(missing))
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be 0..65535, got {args.port}")
    if args.sample_interval <= 0 or args.history <= 0:
        raise UsageError("--sample-interval and --history must be positive numbers of seconds")
    config = client_config(args)
    timeout_s = timeout_ms_of(args, config) / 1000
    del config["default.api.timeout.ms"]
    del config["bootstrap.servers"]
    listener = listen(args.host, args.port)

    import uvicorn

    from gregor.console.app import create_app

    settings = console_settings(args.bootstrap_server, args.host, args.read_only, config,
                                sample_interval_s=args.sample_interval, history_s=args.history, timeout_s=timeout_s)
    try:
        app = create_app(settings)  # makes the clients: a bad client config fails here, before the banner
    except BaseException:
        listener.close()
        raise
    print(f"Gregor console at {url_of(listener)} for the cluster at {args.bootstrap_server}"
          + (" (read-only)" if args.read_only else ""), flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on"))
    server.run(sockets=[listener])
    return 0
