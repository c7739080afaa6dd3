"""`gregor server`: run one broker (with its controller) in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import gc
import logging
import signal
import sys
from typing import TYPE_CHECKING

from gregor.broker.config import BrokerConfig, ConfigError, load_config, parse_overrides
from gregor.broker.unknown_config import describe_unknown_key, unknown_keys
from gregor.cli import event_loop
from gregor.cli.common import ToolError
from gregor.cli.console_serving import missing_extra, missing_extra_message
from gregor.cli.server_check import check_config
from gregor.cli.server_logging import configure_logging
from gregor.storage.dir_lock import DirectoryLockedError

if TYPE_CHECKING:
    from gregor.broker.controller_server import ControllerServer
    from gregor.broker.server import Broker
    from gregor.cli.embedded_console import EmbeddedConsole
    from gregor.metrics.exposition import MetricsServer

EPILOG = """examples:
  gregor server                                   # localhost:9092, data in ./data
  gregor server --config config/server.properties
  gregor server --config config/server.properties --check-config
  gregor server --override listeners=PLAINTEXT://127.0.0.1:19092 --override log.dirs=/tmp/g1
  gregor server --log-file /var/log/gregor/server.log --log-format json --override metrics.port=9404
  gregor server --override console.port=8080 --override console.read.only=true   # needs the console extra
  gregor server --override process.roles=controller --override node.id=1 \
      --override listeners=CONTROLLER://127.0.0.1:19093 --override cluster.id=MkU3OEVBNTcwNTJENDM2Qk \
      --override controller.quorum.voters=1@127.0.0.1:19093,2@127.0.0.1:29093,3@127.0.0.1:39093
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = tools.add_parser(
        "server", help="run a broker", description="Run a Gregor broker in the foreground.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--config", metavar="FILE", help="a Kafka-style server.properties file")
    parser.add_argument("--override", metavar="KEY=VALUE", action="append", default=[],
                        help="set a config key on top of the file (repeatable)")
    parser.add_argument("--check-config", action="store_true",
                        help="print the unknown keys and the values that differ from the defaults, then exit "
                             "without starting: 0 when every key is known, 1 otherwise")
    parser.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="log level (default INFO)")
    parser.add_argument("--log-file", metavar="FILE",
                        help="append the log to FILE instead of stderr (reopened when logrotate moves it)")
    parser.add_argument("--log-format", default="text", choices=["text", "json"],
                        help="text: 'time LEVEL logger message'; json: one object per line (default text)")
    parser.set_defaults(run=run)


def _node(config: BrokerConfig) -> tuple[Broker | ControllerServer, MetricsServer | None]:
    """The node its roles ask for and, when `metrics.port` asks for one, its Prometheus endpoint
    (counting starts before the broker serves its first request); controller-only nodes have
    none yet."""
    if config.process_roles == {"controller"}:
        from gregor.broker.controller_server import ControllerServer
        return ControllerServer(config), None
    from gregor.broker.server import Broker
    if config.get("metrics.port") < 0:
        return Broker(config), None
    from gregor.metrics.broker_metrics import BrokerMetrics
    from gregor.metrics.exposition import MetricsServer
    metrics = BrokerMetrics()
    broker = Broker(config, events=metrics)
    metrics.watch(broker.scrape_state)
    return broker, MetricsServer(metrics.registry)


def _check_console_extra(config: BrokerConfig) -> None:
    """A console the broker is told to serve but cannot is refused (ConfigError), not skipped."""
    if config.get("console.port") < 0:
        return
    missing = missing_extra()
    if missing is not None:
        raise ConfigError(f"console.port: {missing_extra_message(missing)}")


def _console(config: BrokerConfig) -> EmbeddedConsole | None:
    """The web console `console.port` asks for, its port already bound (a busy one is a ToolError)."""
    if config.get("console.port") < 0:
        return None
    from gregor.cli.embedded_console import EmbeddedConsole
    return EmbeddedConsole(config)


def _freeze_startup_heap() -> None:
    """Collect once, then leave what startup made (modules, configs, the metadata image, the
    hosted logs) out of every later garbage collection. A full collection walks every tracked
    object and stops the event loop meanwhile: with the ~50,000 objects of a started broker,
    35-70 ms on 2 cores, which every request waiting in that loop pays (the p99 of acks=all
    produce at 10,000 msg/s). Frozen objects are never collected; what startup leaves as cyclic
    garbage later stays, once."""
    gc.collect()
    gc.freeze()


def run(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config, parse_overrides(args.override))
        _check_console_extra(config)
    except (ConfigError, OSError) as error:
        print(f"gregor server: {error}", file=sys.stderr)
        return 1 if args.check_config else 2
    if args.check_config:
        return check_config(config)
    try:
        configure_logging(args.log_level, args.log_file, args.log_format)
    except OSError as error:
        print(f"gregor server: cannot open the log file: {error}", file=sys.stderr)
        return 2
    for name in unknown_keys(config.originals):
        logging.getLogger("gregor.config").warning(describe_unknown_key(name))
    try:
        console = _console(config)
    except ToolError as error:
        print(f"gregor server: console.port: {error}", file=sys.stderr)
        return 1

    async def serve() -> None:
        broker, exporter = _node(config)
        await broker.start()
        if exporter is not None:
            port = await exporter.listen(config.metrics_host, config.get("metrics.port"))
            logging.getLogger("gregor.metrics").info("Prometheus metrics at http://%s:%d/metrics",
                                                     config.metrics_host or "0.0.0.0", port)
        if console is not None:
            from gregor.broker.server import Broker
            assert isinstance(broker, Broker), "console.port is refused on controller-only nodes"
            first = config.client_listeners()[0].listener
            logging.getLogger("gregor.console").info(await console.start(broker.bound_ports[first]))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        _freeze_startup_heap()  # last: every port is open and a signal meanwhile stops it gracefully
        await stop.wait()
        if console is not None:
            await console.stop()
        if exporter is not None:
            await exporter.close()
        await broker.stop()

    try:
        loop_name = event_loop.chosen_loop()
    except event_loop.EventLoopError as error:
        print(f"gregor server: {error}", file=sys.stderr)
        return 2
    try:
        logging.getLogger("gregor.server").debug("event loop: %s", loop_name)
        event_loop.run(serve(), loop_name)
    except ConfigError as error:
        print(f"gregor server: {error}", file=sys.stderr)
        return 2
    except DirectoryLockedError as error:
        print(f"gregor server: {error}", file=sys.stderr)
        return 1
    except OSError as error:
        print(f"gregor server: {error}", file=sys.stderr)
        return 1
    finally:
        if console is not None:
            console.close()
    return 0
