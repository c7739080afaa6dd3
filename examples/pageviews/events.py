"""The page-view generator: seeded, so a test can regenerate exactly what the demo produced.

Events arrive roughly in event-time order but up to `MAX_LATENESS_MS` late, as clicks from many
browsers do; a few records are not valid events at all (cut-off JSON, plain text, an event
without its time), which the job must set aside rather than drop.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

from gregor.client import AdminClient, Producer
from gregor.client.admin import NewTopic

PAGES = ("/", "/pricing", "/docs", "/docs/spark", "/blog", "/signup")
REFERRERS = ("https://www.google.com/", "https://news.ycombinator.com/", "", "https://github.com/")
MAX_LATENESS_MS = 20_000
"""How far behind the newest event one may arrive; the job's watermark delay must exceed it."""
START_MS = 1_767_225_600_000
"""2026-01-01T00:00:00Z: event time of the first view (a minute boundary, so windows read easily)."""


@dataclass(frozen=True)
class Generated:
    """What the generator produced: the valid events in send order and the invalid record values."""

    events: list[dict]
    invalid: list[bytes]


def generate(seed: int, count: int, minutes: int, invalid: int) -> Generated:
    """`count` page views spread over `minutes` of event time, plus `invalid` bad records."""
    chooser = random.Random(seed)
    span = minutes * 60_000
    events = []
    for index in range(count):
        on_time = START_MS + index * span // count + chooser.randrange(1000)
        events.append({"page": chooser.choice(PAGES), "user": f"user-{chooser.randrange(40)}",
                       "ts": max(START_MS, on_time - chooser.randrange(MAX_LATENESS_MS)),
                       "referrer": chooser.choice(REFERRERS), "session": f"{chooser.getrandbits(32):08x}"})
    kinds = [b'{"page": "/docs", "user": "user-1", "ts": ', b"GET /pricing HTTP/1.1",
             b'{"page": "/blog", "user": "user-2"}']
    return Generated(events, [kinds[index % len(kinds)] for index in range(invalid)])


def produce(bootstrap: str, topic: str, generated: Generated, seed: int) -> int:
    """Send the events keyed by user, with the invalid records at seeded places among them;
    returns how many records were sent."""
    values = [json.dumps(event).encode() for event in generated.events]
    keys: list[bytes | None] = [event["user"].encode() for event in generated.events]
    chooser = random.Random(seed + 1)
    for bad in generated.invalid:
        place = chooser.randrange(len(values) + 1)
        values.insert(place, bad)
        keys.insert(place, None)
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 5}) as producer:
        for key, value in zip(keys, values):
            producer.send(topic, value, key=key)
        producer.flush(60)
    return len(values)


def create_topics(bootstrap: str, views: str, results: str, dead_letters: str) -> None:
    """The page-view topic (2 partitions), the result and dead-letter topics (1 each); topics
    that exist already are kept."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    try:
        wanted = [NewTopic(views, 2, 1), NewTopic(results, 1, 1), NewTopic(dead_letters, 1, 1)]
        for name, outcome in admin.create_topics(wanted).items():
            if isinstance(outcome, Exception) and "TOPIC_ALREADY_EXISTS" not in str(outcome):
                raise SystemExit(f"cannot create topic {name}: {outcome}")
    finally:
        admin.close()
