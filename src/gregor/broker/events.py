"""What the broker reports as it serves requests, for layers above it (metrics) to observe.

The broker calls these hooks; by default they do nothing. `gregor.metrics` installs an observer
that counts (DESIGN.md's layering: metrics may import the broker, never the reverse).
"""

from __future__ import annotations


class BrokerEvents:
    def request_done(self, api_key: int, seconds: float) -> None:
        """A request was answered `seconds` after it was read."""

    def produced(self, topic: str, size: int, records: int) -> None:
        """A produce appended `size` bytes holding `records` records to `topic`."""

    def fetched(self, sizes: dict[str, int]) -> None:
        """A consumer fetch answered with these bytes per topic."""

    def isr_changed(self, topic: str, partition: int, before: int, after: int) -> None:
        """The controller accepted this leader's ISR change of a partition (sizes before and after)."""
