"""A confluent-kafka ShareConsumer in its own process, for tests that kill it with -9.

Explicit acknowledgement mode, and it never acknowledges: it prints one JSON line per record it
receives, {"record": [partition, offset, delivery count]}, and keeps polling until killed, so the
records it holds stay acquired until their locks run out.
"""

from __future__ import annotations

import argparse
import json
import sys

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
    while True:
        for message in consumer.poll(0.2):
            if message.error() is None:
                sys.stdout.write(json.dumps({"record": [message.partition(), message.offset(),
                                                        message.delivery_count()]}) + "\n")
                sys.stdout.flush()


if __name__ == "__main__":
    main()
