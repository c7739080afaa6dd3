"""A Gregor consumer in its own process, for the delivery-semantics tests that kill it with -9.

Reads a topic in a group and prints one JSON object per line: {"processed": [partition, offset,
value]} once a record is processed, {"committed": {partition: offset}} after each synchronous
commit. `--order` says whether a poll's records are committed before processing (at-most-once)
or after (at-least-once). `--die-after-polls N` makes the process SIGKILL itself at the worst
moment of its mode on the Nth non-empty poll: between commit and processing (at-most-once), or
between processing and commit (at-least-once). Exits when `--stop-after` records are processed.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

from gregor.client.consumer import Consumer


def emit(**fields) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--order", choices=["commit-first", "process-first"], required=True)
    parser.add_argument("--die-after-polls", type=int, default=0)
    parser.add_argument("--stop-after", type=int, default=0)
    args = parser.parse_args()
    consumer = Consumer({"bootstrap.servers": args.bootstrap, "group.id": args.group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "max.poll.records": 7, "session.timeout.ms": 6000})
    consumer.subscribe([args.topic])
    polls = processed = 0
    while not args.stop_after or processed < args.stop_after:
        records = list(consumer.poll(0.5))
        if not records:
            continue
        polls += 1
        dying = polls == args.die_after_polls
        if args.order == "commit-first":
            commit(consumer, records)
            if dying:
                os.kill(os.getpid(), signal.SIGKILL)
        for record in records:
            emit(processed=[record.partition, record.offset, record.value.decode()])
            processed += 1
        if args.order == "process-first":
            if dying:
                os.kill(os.getpid(), signal.SIGKILL)
            commit(consumer, records)
    consumer.close()


def commit(consumer: Consumer, records: list) -> None:
    offsets: dict[tuple[str, int], int] = {}
    for record in records:
        offsets[(record.topic, record.partition)] = record.offset + 1
    consumer.commit(offsets)
    emit(committed={str(partition): offset for (_, partition), offset in offsets.items()})


if __name__ == "__main__":
    main()
