"""`subscribed_topic_regex`: RE2 syntax and linear-time matching, as Kafka's RE2/J.

A pattern comes from any client and is matched against every topic name at heartbeats, so it
must not be able to make the broker backtrack for ever (Python's `re` can, on `(a+)+b`). RE2
also gives Kafka's syntax: no lookaround or backreferences. A name matches when the whole name
does (RE2/J `matches()`); internal topics (`__` prefix) never match, as Kafka's consumer never
subscribes them by pattern.
"""

from __future__ import annotations

import functools
from typing import Any, Iterable

import re2

_OPTIONS = re2.Options()
_OPTIONS.log_errors = False  # a client's bad pattern is its error, not a line on the broker's stderr


class InvalidRegex(ValueError):
    """The pattern is not valid RE2; the message says why."""


@functools.lru_cache(maxsize=1024)
def compile_regex(regex: str) -> Any:
    try:
        return re2.compile(regex, options=_OPTIONS)
    except re2.error as error:
        reason = error.args[0] if error.args else "invalid"
        raise InvalidRegex(reason.decode(errors="replace") if isinstance(reason, bytes) else str(reason)) from None


def matching_topics(regex: str, topic_names: Iterable[str]) -> list[str]:
    """The topics `regex` subscribes (none for an invalid one: it was refused at the heartbeat)."""
    try:
        pattern = compile_regex(regex)
    except InvalidRegex:
        return []
    return [name for name in topic_names if not name.startswith("__") and pattern.fullmatch(name) is not None]
