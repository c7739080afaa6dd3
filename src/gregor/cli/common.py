"""What every `gregor <tool>` shares: argument parsing, client settings and one-line errors.

A tool's `run` raises `ToolError` for anything the user can fix (a wrong argument, an unknown
topic, an unreachable cluster); `guarded` turns it, and the client's exceptions, into one line on
stderr and an exit code a script can trust: 0 success, 1 failure, 2 wrong usage, 130 interrupted.
"""

from __future__ import annotations

import argparse
import difflib
import functools
import json
import re
import sys
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, NoReturn, Sequence

from gregor.client.config import ConfigError as ClientConfigError
from gregor.client.errors import ClientErrorCode, KafkaException
from gregor.protocol.error_codes import ErrorCode

if TYPE_CHECKING:
    from gregor.client.admin import AdminClient

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

DEFAULT_TIMEOUT_MS = 5000

_UNREACHABLE = frozenset({ClientErrorCode._ALL_BROKERS_DOWN, ClientErrorCode._TRANSPORT, ClientErrorCode._TIMED_OUT})


class ToolError(Exception):
    """A failure the user can act on; its message is printed as one line, then exit 1 (or `exit_code`)."""

    def __init__(self, message: str, exit_code: int = EXIT_FAILURE) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class UsageError(ToolError):
    """Wrong or conflicting command-line options (exit code 2, as argparse's own errors)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)


_INVALID_CHOICE = re.compile(r"invalid choice: (?P<given>'[^']*') \(choose from (?P<choices>.*)\)$")


class ToolParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line naming the problem and where to look, with
    the closest known names for a mistyped tool, choice or flag ("did you mean")."""

    def parse_known_args(  # type: ignore[override]  # typeshed's overloads, narrowed to what tools pass
            self, args: Sequence[str] | None = None,
            namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        """Unknown arguments are an error of the parser that met them (a tool's, not `gregor`'s),
        so that the suggestions come from that tool's flags."""
        parsed, extras = super().parse_known_args(args, namespace)
        if extras:
            flags = [option for action in self._actions for option in action.option_strings]
            guesses = [guess for extra in extras if extra.startswith("-")
                       for guess in close_matches(extra.split("=", 1)[0], flags)]
            self.error(f"unrecognized arguments: {' '.join(extras)}" + did_you_mean(guesses))
        return parsed, extras

    def error(self, message: str) -> NoReturn:
        choice = _INVALID_CHOICE.search(message)
        if choice is not None:
            choices = [name.strip().strip("'") for name in choice["choices"].split(",")]
            given = choice["given"].strip("'")
            message = message[:choice.start()] + f"invalid choice: {choice['given']}" + \
                did_you_mean(close_matches(given, choices))
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def close_matches(given: str, known: Sequence[str]) -> list[str]:
    """The known names closest to a mistyped one (difflib's ratio, at most three)."""
    return difflib.get_close_matches(given, known, n=3, cutoff=0.6)


def did_you_mean(guesses: Sequence[str]) -> str:
    unique = list(dict.fromkeys(guesses))
    return f"; did you mean {' or '.join(unique)}?" if unique else ""


def add_tool(tools: argparse._SubParsersAction, name: str, summary: str, description: str,
             epilog: str) -> argparse.ArgumentParser:
    """A sub-command parser laid out like `gregor server`'s: description, options, examples."""
    return tools.add_parser(name, help=summary, description=description, epilog=epilog,
                            formatter_class=argparse.RawDescriptionHelpFormatter)


def add_connection_options(parser: argparse.ArgumentParser, config_flags: Sequence[str] = ("--command-config",),
                           timeout: bool = True, controllers: bool = False) -> None:
    """--bootstrap-server (or, with `controllers`, KIP-919's --bootstrap-controller instead), the
    client properties file and (unless the tool's own flags bound the wait) --timeout, the time
    allowed to reach the cluster."""
    if controllers:
        parser.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]",
                            help="the brokers to connect to (this or --bootstrap-controller is required)")
        parser.add_argument("--bootstrap-controller", metavar="HOST:PORT[,...]",
                            help="the controllers to connect to, on their controller listener (KIP-919)")
    else:
        parser.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]",
                            help="the brokers to connect to (required)")
    parser.add_argument(*config_flags, metavar="FILE", dest="command_config",
                        help="a properties file of client configs (Kafka's keys)")
    if timeout:
        parser.add_argument("--timeout", metavar="MS", type=int, default=None,
                            help="how long to wait for the cluster, in ms (default: the file's "
                                 f"default.api.timeout.ms, else {DEFAULT_TIMEOUT_MS})")


def key_value(text: str) -> tuple[str, str]:
    """argparse type for `key=value` items (the value may contain '=')."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected key=value, got {text!r}")
    return key.strip(), value.strip()


def properties_from(pairs: Iterable[tuple[str, str]] | None) -> dict[str, str]:
    return dict(pairs or ())


def read_properties_file(path: str | None) -> dict[str, str]:
    """A Java-style properties file as a dict; a missing or malformed file is a ToolError."""
    if path is None:
        return {}
    # imported here: the broker's configuration module is large, and most tool runs read no file
    from gregor.broker.config import ConfigError as PropertiesError, read_properties
    try:
        return read_properties(path)
    except OSError as error:
        raise ToolError(f"cannot read properties file {path}: {error.strerror or error}") from None
    except PropertiesError as error:
        raise ToolError(f"malformed properties file {path}: {error}") from None


def client_config(args: argparse.Namespace, *layers: dict[str, str]) -> dict[str, Any]:
    """Client configs: --command-config, then `layers` (later wins), then --bootstrap-server and --timeout.

    The timeout bounds every blocking call (default.api.timeout.ms, max.block.ms) so that an
    unreachable cluster is reported within it instead of Kafka's 60 s default.
    """
    controllers = getattr(args, "bootstrap_controller", None)
    if controllers and getattr(args, "bootstrap_server", None):
        raise UsageError("You cannot specify both --bootstrap-controller and --bootstrap-server.")
    if not controllers and not getattr(args, "bootstrap_server", None):
        raise UsageError("missing required option --bootstrap-server HOST:PORT"
                         + (" (or --bootstrap-controller HOST:PORT)" if hasattr(args, "bootstrap_controller") else ""))
    config: dict[str, Any] = dict(read_properties_file(getattr(args, "command_config", None)))
    for layer in layers:
        config.update(layer)
    config.pop("bootstrap.servers" if controllers else "bootstrap.controllers", None)
    config["bootstrap.controllers" if controllers else "bootstrap.servers"] = controllers or args.bootstrap_server
    timeout_ms = timeout_ms_of(args, config)
    config["default.api.timeout.ms"] = timeout_ms
    args.resolved_timeout_ms = timeout_ms
    return config


def timeout_ms_of(args: argparse.Namespace, config: dict[str, Any] | None = None) -> int:
    if getattr(args, "timeout", None) is not None:
        if args.timeout <= 0:
            raise UsageError(f"--timeout must be a positive number of ms, got {args.timeout}")
        return args.timeout
    if config and "default.api.timeout.ms" in config:
        try:
            return int(config["default.api.timeout.ms"])
        except ValueError:
            raise ToolError(f"default.api.timeout.ms must be an integer, got {config['default.api.timeout.ms']!r}") \
                from None
    return DEFAULT_TIMEOUT_MS


def require(args: argparse.Namespace, *names: str, action: str) -> None:
    """Refuse a missing option the way Kafka's tools do: name it and the action needing it."""
    for name in names:
        if getattr(args, name.lstrip("-").replace("-", "_")) in (None, [], False):
            raise UsageError(f"{action} needs {name}")


def one_action(args: argparse.Namespace, actions: Sequence[str]) -> str:
    """The single action flag given; Kafka's tools refuse none or several."""
    chosen = [action for action in actions if getattr(args, action.lstrip("-").replace("-", "_"))]
    if len(chosen) != 1:
        listed = ", ".join(actions)
        raise UsageError(f"give exactly one of {listed}" + (f" (got {', '.join(chosen)})" if chosen else ""))
    return chosen[0]


def read_json_file(path: str, flag: str) -> Any:
    """The JSON document in the file a flag names; an unreadable or malformed file is a ToolError."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except OSError as error:
        raise ToolError(f"cannot read {flag} {path}: {error.strerror or error}") from None
    except ValueError as error:
        raise ToolError(f"{flag} {path} is not valid JSON: {error}") from None


def partition_name(topic: str, partition: int) -> str:
    """A partition as Kafka's TopicPartition prints it: `topic-partition`."""
    return f"{topic}-{partition}"


def unescape(text: str) -> str:
    """Let a separator typed in a shell as `'\\t'` (or `\\n`, `\\r`) mean the character, as Kafka's tools do."""
    return text.replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r")


def topic_matcher(pattern: str) -> Callable[[str], bool]:
    """Kafka's --topic for list/describe/delete: a regular expression matching whole names."""
    try:
        compiled = re.compile(pattern)
    except re.error as error:
        raise UsageError(f"--topic {pattern!r} is not a valid regular expression: {error}") from None
    return lambda name: compiled.fullmatch(name) is not None


def missing_topic(topic: str | None) -> str:
    """What to say about a topic the cluster does not have, and the two ways to get it."""
    name = f"topic '{topic}'" if topic else "the topic"
    return (f"{name} does not exist: create it with 'gregor topics --create{f' --topic {topic}' if topic else ''}', "
            f"or let the broker create topics on first use (auto.create.topics.enable=true)")


def describe_kafka_error(error: KafkaException, bootstrap: str | None, timeout_ms: int | None,
                         topic: str | None = None, controllers: bool = False) -> str:
    """One line for a client exception; an unreachable cluster (no connection, or no answer within
    the time allowed, which on a loaded machine may end before a connection attempt fails) says
    where and how long we tried. A wait that ended with the cluster answering (the client chains
    the last answer as the cause) names that answer instead: UNKNOWN_TOPIC_OR_PARTITION is a topic
    that does not exist, not a broker that is down."""
    text = str(error)
    answer = error.__cause__
    if isinstance(answer, KafkaException) and answer.code > 0:
        if answer.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            return f"{missing_topic(topic)} (detail: {_one_line(text)})"
        return _one_line(text)
    if error.code in _UNREACHABLE:
        waited = f" within {timeout_ms} ms" if timeout_ms else ""
        node, flag = ("a controller", "--bootstrap-controller") if controllers else ("a broker", "--bootstrap-server")
        return (f"cannot reach the cluster at {bootstrap}{waited}: is {node} running there? "
                f"Check {flag} (detail: {_one_line(text)})")
    return _one_line(text)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def guarded(tool: str) -> Callable[[Callable[[argparse.Namespace], int]], Callable[[argparse.Namespace], int]]:
    """Run a tool's body, printing its failures as one line `gregor <tool>: error: ...`."""

    def wrap(body: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
        @functools.wraps(body)
        def run(args: argparse.Namespace) -> int:
            prefix = f"gregor {tool}: error:"
            try:
                return body(args)
            except ToolError as error:
                _print_error(prefix, str(error))
                return error.exit_code
            except KafkaException as error:
                timeout = getattr(args, "resolved_timeout_ms", None)
                _print_error(prefix, describe_kafka_error(error, bootstrap_of(args), timeout,
                                                          getattr(args, "topic", None),
                                                          bool(getattr(args, "bootstrap_controller", None))))
                return EXIT_FAILURE
            except ClientConfigError as error:
                _print_error(prefix, f"invalid client config: {error}")
                return EXIT_USAGE
            except KeyboardInterrupt:
                return EXIT_INTERRUPTED
            except BrokenPipeError:
                _silence_stdout()
                return EXIT_OK
        return run

    return wrap


def _print_error(prefix: str, message: str) -> None:
    print(f"{prefix} {_one_line(message)}", file=sys.stderr, flush=True)


def _silence_stdout() -> None:
    """After the reader of our output went away (`| head`), keep Python from complaining at exit."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


def print_table(rows: Sequence[Sequence[object]], headers: Sequence[str]) -> None:
    """Columns padded to their widest cell, as Kafka's consumer-groups command prints them."""
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [max([len(header)] + [len(row[index]) for row in cells]) for index, header in enumerate(headers)]
    for row in [list(headers)] + cells:
        print(" ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())


def report_deletions(kind: str, groups: Sequence[str], results: Mapping[str, object]) -> int:
    """The lines Kafka's group tools print after a delete (`kind`: "consumer" or "share"); a
    ToolError naming each group that could not be deleted."""
    failed = {group: error for group, error in results.items() if error is not None}
    succeeded = [group for group in groups if group not in failed]
    if succeeded:
        print(f"Deletion of requested {kind} groups ({', '.join(repr(g) for g in succeeded)}) was successful.")
    if failed:
        raise ToolError(f"Deletion of some {kind} groups failed: " + "; ".join(
            f"Group '{group}' could not be deleted due to: {error}" for group, error in failed.items()))
    return 0


def fail(message: str) -> NoReturn:
    raise ToolError(message)


def open_admin(args: argparse.Namespace) -> AdminClient:
    """An AdminClient for --bootstrap-server and --command-config, bounded by --timeout."""
    from gregor.client.admin import AdminClient  # imported by the tools that connect, not by every tool
    return AdminClient(client_config(args))


def explain(error: KafkaException, args: argparse.Namespace) -> str:
    """A per-item error of an admin call in one line (an unreachable cluster said plainly)."""
    return describe_kafka_error(error, bootstrap_of(args), getattr(args, "resolved_timeout_ms", None),
                                controllers=bool(getattr(args, "bootstrap_controller", None)))


def bootstrap_of(args: argparse.Namespace) -> str | None:
    """The addresses a tool was pointed at (--bootstrap-server or --bootstrap-controller)."""
    return getattr(args, "bootstrap_server", None) or getattr(args, "bootstrap_controller", None)
