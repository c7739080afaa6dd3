"""`gregor console-consumer`: print the records of topics, as kafka-console-consumer.sh.

Records are written by Kafka's DefaultMessageFormatter rules (print.key, print.offset, ...,
key.separator, line.separator). With --group, the offsets of exactly the records printed are
committed (every auto.commit.interval.ms and at exit), so a group's lag reflects what was shown.
Without --group the topic's partitions are assigned directly: no throw-away group is created.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
from dataclasses import dataclass
from typing import Any, BinaryIO, Callable

from gregor.cli.common import (
    ToolError, UsageError, add_connection_options, add_tool, client_config, guarded, key_value, missing_topic,
    properties_from, read_properties_file, topic_matcher, unescape,
)
from gregor.client import Consumer, ConsumerRecord, TopicPartition, WakeupException

FORMATTERS = ("kafka.tools.DefaultMessageFormatter", "org.apache.kafka.tools.consumer.DefaultMessageFormatter",
              "DefaultMessageFormatter")
TIMESTAMP_TYPES = {0: "CreateTime", 1: "LogAppendTime"}

EPILOG = """examples:
  gregor console-consumer --bootstrap-server localhost:9092 --topic greetings --from-beginning
  gregor console-consumer --bootstrap-server localhost:9092 --topic events --group readers \\
      --max-messages 10 --property print.key=true --property print.offset=true
  gregor console-consumer --bootstrap-server localhost:9092 --topic events --partition 0 --offset 42 \\
      --timeout-ms 5000 --property print.timestamp=true --property print.headers=true
  gregor console-consumer --bootstrap-server localhost:9092 --include 'events|audit' --from-beginning

formatter properties (DefaultMessageFormatter): print.timestamp, print.partition, print.offset,
  print.headers, print.key, print.value (true), key.separator (\\t), line.separator (\\n),
  headers.separator (,), null.literal (null)
"""


def register(tools: argparse._SubParsersAction) -> None:
    parser = add_tool(tools, "console-consumer", "print records of topics to stdout",
                      "Read records and print them to stdout (kafka-console-consumer.sh).", EPILOG)
    add_connection_options(parser, config_flags=("--consumer.config", "--command-config"), timeout=False)
    parser.add_argument("--topic", metavar="TOPIC", help="the topic to read")
    parser.add_argument("--include", metavar="REGEX", help="read every topic whose whole name matches")
    parser.add_argument("--group", metavar="GROUP", help="the consumer group to join (and commit for)")
    parser.add_argument("--partition", type=int, metavar="N", help="read only this partition")
    parser.add_argument("--offset", metavar="OFFSET", default=None,
                        help="with --partition: earliest, latest (default) or an offset")
    parser.add_argument("--from-beginning", action="store_true",
                        help="start at the earliest record when there is no committed offset")
    parser.add_argument("--max-messages", type=int, metavar="N", help="exit after N records")
    parser.add_argument("--timeout-ms", type=int, metavar="MS", help="exit when no record arrives for MS ms")
    parser.add_argument("--formatter", default=FORMATTERS[0], metavar="CLASS",
                        help="only Kafka's DefaultMessageFormatter is available")
    parser.add_argument("--property", type=key_value, action="append", metavar="KEY=VALUE",
                        help="a formatter property (repeatable; see below)")
    parser.add_argument("--formatter-config", metavar="FILE", help="a properties file of formatter properties")
    parser.add_argument("--consumer-property", type=key_value, action="append", metavar="KEY=VALUE",
                        help="a consumer config (repeatable)")
    parser.add_argument("--isolation-level", choices=("read_committed", "read_uncommitted"),
                        help="read_uncommitted (default) or read_committed")
    parser.set_defaults(run=run)


@dataclass(frozen=True)
class MessageFormat:
    """DefaultMessageFormatter's properties."""

    print_timestamp: bool = False
    print_partition: bool = False
    print_offset: bool = False
    print_headers: bool = False
    print_key: bool = False
    print_value: bool = True
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    null_literal: bytes = b"null"

    @classmethod
    def from_properties(cls, properties: dict[str, str]) -> MessageFormat:
        flags = ("print.timestamp", "print.partition", "print.offset", "print.headers", "print.key", "print.value")
        texts = {"key.separator": "\t", "line.separator": "\n", "headers.separator": ",", "null.literal": "null"}
        unknown = sorted(set(properties) - set(flags) - set(texts))
        if unknown:
            raise UsageError(f"unknown --property {unknown[0]}; known: {', '.join(sorted(flags + tuple(texts)))}")
        values: dict[str, Any] = {name.replace(".", "_"): properties.get(name, "true" if name == "print.value"
                                                                           else "false").strip().lower() == "true"
                                  for name in flags}
        for name, default in texts.items():
            values[name.replace(".", "_")] = unescape(properties.get(name, default)).encode()
        return cls(**values)

    def write(self, record: ConsumerRecord, out: BinaryIO) -> None:
        """One record, fields in Kafka's order, each followed by key.separator or, last, line.separator."""
        fields: list[bytes] = []
        if self.print_timestamp:
            kind = TIMESTAMP_TYPES.get(record.timestamp_type)
            fields.append(f"{kind}:{record.timestamp}".encode() if kind and record.timestamp >= 0 else b"NO_TIMESTAMP")
        if self.print_partition:
            fields.append(b"Partition:%d" % record.partition)
        if self.print_offset:
            fields.append(b"Offset:%d" % record.offset)
        if self.print_headers:
            fields.append(self.headers_separator.join(
                name.encode() + b":" + (self.null_literal if value is None else value)
                for name, value in record.headers) if record.headers else b"NO_HEADERS")
        if self.print_key:
            fields.append(self.null_literal if record.key is None else record.key)
        if self.print_value:
            fields.append(self.null_literal if record.value is None else record.value)
        if fields:
            out.write(self.key_separator.join(fields) + self.line_separator)


def _check_options(args: argparse.Namespace) -> None:
    if (args.topic is None) == (args.include is None):
        raise UsageError("give exactly one of --topic and --include")
    if args.partition is not None and args.topic is None:
        raise UsageError("--partition needs --topic")
    if args.offset is not None and args.partition is None:
        raise UsageError("--offset needs --partition (the partition to start reading at that offset)")
    if args.offset is not None and args.from_beginning:
        raise UsageError("--offset and --from-beginning cannot be given together")
    if args.offset is not None and args.offset not in ("earliest", "latest"):
        try:
            if int(args.offset) < 0:
                raise ValueError
        except ValueError:
            raise UsageError(f"--offset must be earliest, latest or a non-negative offset, got {args.offset!r}") \
                from None
    if args.formatter not in FORMATTERS:
        raise UsageError(f"--formatter {args.formatter}: only {FORMATTERS[0]} is available")
    for name in ("max_messages", "timeout_ms"):
        value = getattr(args, name)
        if value is not None and value <= 0:
            raise UsageError(f"--{name.replace('_', '-')} must be positive, got {value}")


def _consumer_config(args: argparse.Namespace) -> dict[str, Any]:
    config = client_config(args, properties_from(args.consumer_property))
    if args.group is not None:
        config["group.id"] = args.group
    if args.from_beginning:
        config["auto.offset.reset"] = "earliest"
    else:
        config.setdefault("auto.offset.reset", "latest")
    if args.isolation_level is not None:
        config["isolation.level"] = args.isolation_level
    config["enable.auto.commit"] = False
    return config


class Committer:
    """Commits the offsets after the records printed, at most every `interval` seconds."""

    def __init__(self, consumer: Consumer, interval: float) -> None:
        self._consumer = consumer
        self._interval = interval
        self._pending: dict[TopicPartition, int] = {}
        self._next = time.monotonic() + interval

    def printed(self, record: ConsumerRecord) -> None:
        self._pending[TopicPartition(record.topic, record.partition)] = record.offset + 1

    def maybe_commit(self) -> None:
        if time.monotonic() >= self._next:
            self.commit()

    def commit(self) -> None:
        if self._pending:
            self._consumer.commit(dict(self._pending))
            self._pending.clear()
        self._next = time.monotonic() + self._interval


@guarded("console-consumer")
def run(args: argparse.Namespace) -> int:
    _check_options(args)
    properties = read_properties_file(args.formatter_config)
    properties.update(properties_from(args.property))
    message_format = MessageFormat.from_properties(properties)
    config = _consumer_config(args)
    interval = int(config.get("auto.commit.interval.ms", 5000)) / 1000
    consumer = Consumer(config)
    stop = _stop_on_signals(consumer)
    try:
        _start(consumer, args)
        committer = Committer(consumer, interval) if args.group is not None else None
        counter = [0]
        try:
            _consume(consumer, args, message_format, committer, counter)
            if committer is not None:
                committer.commit()
        except WakeupException:
            if committer is not None:
                committer.commit()
        finally:
            print(f"Processed a total of {counter[0]} messages", file=sys.stderr, flush=True)
    except WakeupException:
        pass
    finally:
        stop()
        consumer.close()
    return 0


def _stop_on_signals(consumer: Consumer) -> Callable[[], None]:
    """The first SIGINT or SIGTERM ends the loop through wakeup() (safe in a signal handler), so
    that the consumer commits and closes; it also puts the previous handlers back, so that a
    second signal interrupts whatever the shutdown waits for (exit 130) instead of being lost."""
    signals = (signal.SIGINT, signal.SIGTERM)
    previous: dict[int, Any] = {}

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def stop(signum: int, frame: Any) -> None:
        restore()
        consumer.wakeup()

    for signum in signals:
        previous[signum] = signal.signal(signum, stop)
    return restore


def _start(consumer: Consumer, args: argparse.Namespace) -> None:
    """Subscribe (with --group) or assign, after checking that the topics exist."""
    if args.include is not None:
        matches = topic_matcher(args.include)
        topics = {name: partitions for name, partitions in consumer.list_topics().items() if matches(name)}
        if args.group is not None:
            consumer.subscribe("^(" + args.include + ")$")
            return
        if not topics:
            raise ToolError(f"no topic matches --include {args.include!r} (see 'gregor topics --list')")
        consumer.assign([(name, p.partition) for name, partitions in topics.items() for p in partitions])
        return
    partitions = consumer.partitions_for(args.topic)
    if not partitions:
        raise ToolError(missing_topic(args.topic))
    if args.partition is None:
        if args.group is not None:
            consumer.subscribe([args.topic])
        else:
            consumer.assign([(args.topic, p.partition) for p in partitions])
        return
    if args.partition not in {p.partition for p in partitions}:
        raise ToolError(f"topic '{args.topic}' has no partition {args.partition} "
                        f"(it has {len(partitions)}: 0..{len(partitions) - 1})")
    tp = TopicPartition(args.topic, args.partition)
    consumer.assign([tp])
    if args.offset == "earliest" or (args.offset is None and args.from_beginning):
        consumer.seek_to_beginning([tp])
    elif args.offset == "latest" or (args.offset is None and args.group is None):
        consumer.seek_to_end([tp])
    elif args.offset is not None:
        consumer.seek(tp, int(args.offset))


def _consume(consumer: Consumer, args: argparse.Namespace, message_format: MessageFormat,
             committer: Committer | None, counter: list[int]) -> None:
    """Print records until --max-messages, --timeout-ms or a signal; `counter[0]` counts them
    (a list, so that the count survives the WakeupException a signal raises)."""
    out = sys.stdout.buffer
    limit = args.max_messages
    idle_limit = args.timeout_ms / 1000 if args.timeout_ms is not None else None
    last_record = time.monotonic()
    while limit is None or counter[0] < limit:
        records = consumer.poll(0.2 if idle_limit is None else min(0.2, idle_limit))
        if not records and idle_limit is not None and time.monotonic() - last_record >= idle_limit:
            print(f"gregor console-consumer: no record for {args.timeout_ms} ms, exiting",
                  file=sys.stderr, flush=True)
            break
        for record in records:
            if limit is not None and counter[0] >= limit:
                break
            message_format.write(record, out)
            counter[0] += 1
            if committer is not None:
                committer.printed(record)
        if records:
            out.flush()
            last_record = time.monotonic()
        if committer is not None:
            committer.maybe_commit()
