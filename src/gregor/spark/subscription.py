"""Which topic-partitions a query reads: `subscribe`, `subscribePattern` or `assign`, as in Spark's
Kafka source. Resolved against the cluster's current topics each time offsets are planned, so
partitions added later (and, for a pattern, topics created later) are picked up."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from gregor.client import TopicPartition
from gregor.spark.errors import OptionError


@dataclass(frozen=True)
class Subscription:
    """Exactly one of `topics`, `pattern` or `partitions` is set; `option` names where it came from."""

    option: str
    topics: tuple[str, ...] = ()
    pattern: str | None = None
    partitions: tuple[TopicPartition, ...] = ()

    def select(self, cluster: Mapping[str, int]) -> list[TopicPartition]:
        """The subscribed partitions given the cluster's partition count per topic; a named topic
        or partition that does not exist is an OptionError (a pattern may match nothing yet)."""
        if self.pattern is not None:
            compiled = re.compile(self.pattern)
            return sorted(TopicPartition(topic, index) for topic, count in cluster.items()
                          if compiled.fullmatch(topic) for index in range(count))
        if self.topics:
            missing = [topic for topic in self.topics if topic not in cluster]
            if missing:
                raise OptionError(self.option, f"unknown topic(s) {', '.join(missing)}")
            return sorted(TopicPartition(topic, index) for topic in self.topics for index in range(cluster[topic]))
        missing = [f"{tp.topic}-{tp.partition}" for tp in self.partitions
                   if tp.partition >= cluster.get(tp.topic, 0)]
        if missing:
            raise OptionError(self.option, f"unknown partition(s) {', '.join(missing)}")
        return sorted(self.partitions)
