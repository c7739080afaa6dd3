"""A confluent-kafka group member in its own process, for tests that kill it with -9.

Prints one JSON object per line: {"assigned": [[topic, partition], ...]} after each rebalance,
{"record": [partition, offset]} for each record once it is processed, and {"committed": ...}
after each synchronous commit, {"revoked": [...]} when partitions are taken away. Runs until
killed. `--group-protocol consumer` makes it a KIP-848 member (the broker assigns; no session
timeout or heartbeat interval of its own).
"""

from __future__ import annotations

import argparse
import json
import sys

from confluent_kafka import Consumer


def emit(**fields) -> None:
    sys.stdout.write(json.dumps(fields) + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--instance-id")
    parser.add_argument("--session-timeout-ms", default="6000")
    parser.add_argument("--group-protocol", default="classic", choices=("classic", "consumer"))
    args = parser.parse_args()
    config = {"bootstrap.servers": args.bootstrap, "group.id": args.group, "auto.offset.reset": "earliest",
              "enable.auto.commit": False}
    if args.group_protocol == "consumer":
        config["group.protocol"] = "consumer"
    else:
        config.update({"session.timeout.ms": args.session_timeout_ms, "heartbeat.interval.ms": 500})
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    consumer = Consumer(config)

    def assigned(_consumer, partitions) -> None:
        emit(assigned=sorted([p.topic, p.partition] for p in partitions))

    def revoked(_consumer, partitions) -> None:
        emit(revoked=sorted([p.topic, p.partition] for p in partitions))

    consumer.subscribe([args.topic], on_assign=assigned, on_revoke=revoked)
    while True:
        messages = consumer.consume(100, 0.2)
        processed = [m for m in messages if m.error() is None]
        for message in processed:
            emit(record=[message.partition(), message.offset()])
        if processed:
            committed = consumer.commit(asynchronous=False)
            emit(committed=sorted([p.partition, p.offset] for p in committed))


if __name__ == "__main__":
    main()
