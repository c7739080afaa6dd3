"""Supplied keys that nothing in Gregor reads, found at start so that a misspelt key
(`listners=...`) is not silently ignored: Kafka logs "The configuration 'x' was supplied but isn't
a known config." for each; Gregor adds the closest known key.

Known: every key of BROKER_CONFIG_KEYS, the broker synonyms of topic configs (`log.preallocate`,
`log.roll.jitter.ms`, ... which set the topics' defaults), and Kafka's per-listener prefix
`listener.name.<listener>.`, whose keys are Kafka's and cannot be judged by spelling here.
"""

from __future__ import annotations

import difflib
from typing import Iterable

from gregor.broker.config import BROKER_CONFIG_KEYS
from gregor.metadata.topic_configs import BROKER_SYNONYMS, TOPIC_CONFIG_KEYS

KNOWN_KEYS = frozenset(BROKER_CONFIG_KEYS) | frozenset(BROKER_SYNONYMS)
KNOWN_PREFIXES = ("listener.name.",)
_CLOSE_ENOUGH = 0.8  # difflib ratio: `listners` and `retention.ms` match, unrelated keys do not


def unknown_keys(names: Iterable[str]) -> list[str]:
    """The names, sorted, that are neither a known key nor under a known prefix."""
    return sorted(name for name in set(names)
                  if name not in KNOWN_KEYS and not name.startswith(KNOWN_PREFIXES))


def closest_key(name: str) -> str | None:
    """The known key `name` is most likely a misspelling of, if one is close; for a topic config
    (`segment.ms`), the broker key that sets its default (`log.roll.ms`)."""
    if name in TOPIC_CONFIG_KEYS:
        return TOPIC_CONFIG_KEYS[name].synonyms[0].name
    matches = difflib.get_close_matches(name, KNOWN_KEYS, n=1, cutoff=_CLOSE_ENOUGH)
    return matches[0] if matches else None


def describe_unknown_key(name: str) -> str:
    """Kafka's warning for an unused key, with a suggestion when one is close."""
    suggestion = closest_key(name)
    hint = f"; did you mean '{suggestion}'?" if suggestion else ""
    return f"The configuration '{name}' was supplied but isn't a known config{hint}"
