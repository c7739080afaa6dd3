"""`gregor console-producer`: send the lines of stdin to a topic, as kafka-console-producer.sh.

Lines are parsed as Kafka 3.x's LineMessageReader does (optional headers, key and value on one
line, separators chosen by --property). Options the producer also reads from its properties
follow Kafka's precedence: an option given on the command line wins, then --producer-property,
then --producer.config, then the option's default.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any, BinaryIO, Iterator

from gregor.cli.common import (
    EXIT_FAILURE, ToolError, UsageError, add_connection_options, add_tool, client_config, guarded, key_value,
    properties_from, read_properties_file, require,
)
from gregor.client import KafkaException, Producer, RecordMetadata

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
DEFAULT_MAX_BLOCK_MS = 5000

EPILOG = """examples:
  echo hello | gregor console-producer --bootstrap-server localhost:9092 --topic greetings
  printf 'user-1\\tlogged in\\n' | gregor console-producer --bootstrap-server localhost:9092 \\
      --topic events --property parse.key=true
  printf 'source:web,trace:42|user-1=clicked\\n' | gregor console-producer \\
      --bootstrap-server localhost:9092 --topic events --property parse.headers=true \\
      --property headers.delimiter='|' --property parse.key=true --property key.separator==
  gregor console-producer --bootstrap-server localhost:9092 --topic events --sync \\
      --compression-codec zstd --producer-property linger.ms=5 < events.txt

line format (LineMessageReader): [HEADERS<headers.delimiter>][KEY<key.separator>]VALUE
properties: parse.key (false), key.separator (\\t), parse.headers (false), headers.delimiter (\\t),
  headers.separator (,), headers.key.separator (:), null.marker (unset), ignore.error (false)
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "console-producer", "send lines from stdin to a topic",
                      "Read lines from stdin and send each as a record (kafka-console-producer.sh).", EPILOG)
    add_connection_options(parser, config_flags=("--producer.config", "--command-config"), timeout=False)
    parser.add_argument("--topic", metavar="TOPIC", help="the topic to produce to (required)")
    parser.add_argument("--property", type=key_value, action="append", metavar="KEY=VALUE",
                        help="a line-reader property (repeatable; see below)")
    parser.add_argument("--reader-config", metavar="FILE", help="a properties file of line-reader properties")
    parser.add_argument("--producer-property", type=key_value, action="append", metavar="KEY=VALUE",
                        help="a producer config (repeatable)")
    parser.add_argument("--sync", action="store_true", help="wait for each record's acknowledgement")
    parser.add_argument("--compression-codec", nargs="?", const="gzip", choices=CODECS, metavar="CODEC",
                        help=f"one of {', '.join(CODECS)} (gzip when given without a value; default none)")
    parser.add_argument("--request-required-acks", metavar="ACKS",
                        help="acks: 0, 1 or all/-1 (default -1)")
    parser.add_argument("--batch-size", type=int, metavar="BYTES", help="batch.size (default 16384)")
    parser.add_argument("--timeout", type=int, metavar="MS",
                        help="linger.ms: how long a batch waits for more records (default 1000)")
    parser.add_argument("--message-send-max-retries", type=int, metavar="N", help="retries (default 3)")
    parser.add_argument("--retry-backoff-ms", type=int, metavar="MS", help="retry.backoff.ms (default 100)")
    parser.add_argument("--request-timeout-ms", type=int, metavar="MS", help="request.timeout.ms (default 1500)")
    parser.add_argument("--max-block-ms", type=int, metavar="MS",
                        help=f"max.block.ms: how long to wait for the cluster (default {DEFAULT_MAX_BLOCK_MS})")
    parser.set_defaults(run=run)


@dataclass(frozen=True)
class LineFormat:
    """LineMessageReader's properties."""

    parse_key: bool = False
    key_separator: bytes = b"\t"
    parse_headers: bool = False
    headers_delimiter: bytes = b"\t"
    headers_separator: bytes = b","
    headers_key_separator: bytes = b":"
    null_marker: bytes | None = None
    ignore_error: bool = False

    @classmethod
    def from_properties(cls, properties: dict[str, str]) -> LineFormat:
        known = {"parse.key", "key.separator", "parse.headers", "headers.delimiter", "headers.separator",
                 "headers.key.separator", "null.marker", "ignore.error"}
        unknown = sorted(set(properties) - known)
        if unknown:
            raise UsageError(f"unknown --property {unknown[0]}; known: {', '.join(sorted(known))}")

        def flag(name: str) -> bool:
            return properties.get(name, "false").strip().lower() == "true"

        def text(name: str, default: bytes) -> bytes:
            value = properties.get(name)
            if value is None:
                return default
            if not value:
                raise UsageError(f"--property {name} must not be empty")
            return value.encode()

        line_format = cls(
            parse_key=flag("parse.key"), key_separator=text("key.separator", b"\t"),
            parse_headers=flag("parse.headers"), headers_delimiter=text("headers.delimiter", b"\t"),
            headers_separator=text("headers.separator", b","),
            headers_key_separator=text("headers.key.separator", b":"),
            null_marker=properties["null.marker"].encode() if properties.get("null.marker") else None,
            ignore_error=flag("ignore.error"))
        if line_format.parse_key and line_format.parse_headers and \
                line_format.headers_delimiter == line_format.key_separator:
            raise UsageError("headers.delimiter and key.separator must differ when both parse.headers and "
                             "parse.key are on")
        return line_format


@dataclass(frozen=True)
class LineRecord:
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]]


class LineError(ValueError):
    """A line that does not have the configured shape (Kafka throws and stops the producer)."""


def parse_line(line: bytes, number: int, line_format: LineFormat) -> LineRecord:
    """Split one line into headers, key and value as LineMessageReader does."""
    headers: list[tuple[str, bytes | None]] = []
    rest = line
    if line_format.parse_headers:
        head, found, tail = line.partition(line_format.headers_delimiter)
        if found:
            headers = _parse_headers(head, number, line_format)
            rest = tail
        elif not line_format.ignore_error:
            raise LineError(f"No headers delimiter found on line number {number}: '{_show(line)}'")
    key: bytes | None = None
    value: bytes | None = rest
    if line_format.parse_key:
        head, found, tail = rest.partition(line_format.key_separator)
        if found:
            key, value = head, tail
        elif not line_format.ignore_error:
            raise LineError(f"No key separator found on line number {number}: '{_show(line)}'")
    return LineRecord(_null_or(key, line_format), _null_or(value, line_format), headers)


def _parse_headers(text: bytes, number: int, line_format: LineFormat) -> list[tuple[str, bytes | None]]:
    headers: list[tuple[str, bytes | None]] = []
    if not text:
        return headers
    for item in text.split(line_format.headers_separator):
        name, found, value = item.partition(line_format.headers_key_separator)
        if line_format.null_marker is not None and name == line_format.null_marker:
            raise LineError(f"Header keys should not be equal to the null marker "
                            f"'{_show(line_format.null_marker)}' on line number {number}")
        headers.append((name.decode(errors="replace"), _null_or(value, line_format) if found else None))
    return headers


def _null_or(data: bytes | None, line_format: LineFormat) -> bytes | None:
    if data is not None and line_format.null_marker is not None and data == line_format.null_marker:
        return None
    return data


def _show(data: bytes) -> str:
    return data.decode(errors="replace")


def read_lines(stream: BinaryIO) -> Iterator[bytes]:
    """Lines without their terminator (\\n, \\r\\n), as Java's BufferedReader.readLine."""
    for raw in stream:
        yield raw.rstrip(b"\n").removesuffix(b"\r")


def _producer_config(args: argparse.Namespace) -> dict[str, Any]:
    config = client_config(args, properties_from(args.producer_property))
    config.pop("default.api.timeout.ms", None)
    options = {
        "compression.type": (args.compression_codec, "none"),
        "acks": (args.request_required_acks, "-1"),
        "batch.size": (args.batch_size, 16384),
        "linger.ms": (args.timeout, 1000),
        "retries": (args.message_send_max_retries, 3),
        "retry.backoff.ms": (args.retry_backoff_ms, 100),
        "request.timeout.ms": (args.request_timeout_ms, 1500),
        "max.block.ms": (args.max_block_ms, DEFAULT_MAX_BLOCK_MS),
    }
    for key, (given, default) in options.items():
        if given is not None:
            config[key] = given
        else:
            config.setdefault(key, default)
    if config["acks"] == "all":
        config["acks"] = "-1"
    config.setdefault("delivery.timeout.ms", max(120000, int(config["linger.ms"]) + int(config["request.timeout.ms"])))
    return config


@guarded("console-producer")
def run(args: argparse.Namespace) -> int:
    require(args, "--topic", action="console-producer")
    reader_properties = read_properties_file(args.reader_config)
    reader_properties.update(properties_from(args.property))
    line_format = LineFormat.from_properties(reader_properties)
    config = _producer_config(args)
    args.resolved_timeout_ms = int(config["max.block.ms"])
    failures: list[str] = []

    def report(metadata: RecordMetadata | None, error: KafkaException | None) -> None:
        if error is not None:
            failures.append(str(error))
            print(f"gregor console-producer: error: a record to topic {args.topic} was not sent: {error}",
                  file=sys.stderr, flush=True)

    with Producer(config) as producer:
        for number, line in enumerate(read_lines(sys.stdin.buffer), 1):
            try:
                record = parse_line(line, number, line_format)
            except LineError as error:
                producer.flush()
                raise ToolError(str(error)) from None
            future = producer.send(args.topic, record.value, key=record.key, headers=record.headers or None,
                                   callback=None if args.sync else report)
            if args.sync:
                future.get()
        producer.flush()
    return EXIT_FAILURE if failures else 0

