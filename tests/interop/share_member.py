"""A confluent-kafka ShareConsumer in its own process, for tests that kill it with -9.

Explicit acknowledgement mode, and it never acknowledges: it prints one JSON line per record of
its first non-empty poll, {"record": [partition, offset, delivery count]}, then sleeps until
killed (a later poll would raise: confluent-kafka refuses to poll again before the records are
acknowledged), its background threads heartbeating, so the records it holds stay acquired.
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from confluent_kafka import ShareConsumer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    args = parser.parse_args()
    consumer = ShareConsumer({"bootstrap.servers": args.bootstrap, "group.id": args.group,
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([args.topic])
    received: list = []
    while not received:
        received = [message for message in consumer.poll(0.2) if message.error() is None]
    for message in received:
        sys.stdout.write(json.dumps({"record": [message.partition(), message.offset(),
                                                message.delivery_count()]}) + "\n")
    sys.stdout.flush()
    while True:
        time.sleep(1)


if __name__ == "__main__":
    main()
