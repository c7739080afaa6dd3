"""`ssl.principal.mapping.rules`: Kafka's rules from a certificate's subject to a user name.

Rules are tried in order: `RULE:pattern/replacement/` (optionally followed by `L` or `U` to lower-
or upper-case the result) applies when the pattern matches the whole RFC 2253 subject, and
`DEFAULT` gives the subject unchanged. A subject no rule matches fails the connection, as in Kafka.
Patterns are Java regular expressions; the common subset (groups, classes, `.*?`, anchors) reads
the same in Python, and `$1` in a replacement names a group.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RULE = re.compile(r"\s*(?:(DEFAULT)|RULE:((?:\\/|[^/])*)/((?:\\/|[^/])*)/([LU]?))\s*(?:,|$)")


@dataclass(frozen=True)
class _Rule:
    pattern: re.Pattern[str] | None  # None: DEFAULT
    replacement: str = ""
    case: str = ""

    def apply(self, subject: str) -> str | None:
        if self.pattern is None:
            return subject
        match = self.pattern.fullmatch(subject)
        if match is None:
            return None
        name = match.expand(self.replacement)
        return name.lower() if self.case == "L" else name.upper() if self.case == "U" else name


class PrincipalMapper:
    """Maps a client certificate's subject to a user name with the listener's rules."""

    def __init__(self, rules: str = "DEFAULT") -> None:
        self.rules_text = rules
        self._rules = parse_rules(rules)

    def name(self, subject: str) -> str:
        for rule in self._rules:
            name = rule.apply(subject)
            if name is not None:
                return name
        raise ValueError(f"No rules apply to {subject}, rules {self.rules_text}")

    def principal(self, subject: str) -> str:
        return f"User:{self.name(subject)}"


def _java_replacement(text: str) -> str:
    """A Java replacement (`$1`, `\\/`) as a Python `expand` template (`\\g<1>`)."""
    text = text.replace("\\/", "/")
    out = re.sub(r"\\(.)", lambda m: m.group(1).replace("\\", "\\\\"), text)
    return re.sub(r"\$(\d+)", r"\\g<\1>", out)


def parse_rules(text: str) -> list[_Rule]:
    """The rules of an `ssl.principal.mapping.rules` value; ValueError names the unreadable part."""
    rules: list[_Rule] = []
    position = 0
    text = text.strip()
    while position < len(text):
        match = _RULE.match(text, position)
        if match is None or match.end() == position:
            raise ValueError(f"ssl.principal.mapping.rules: cannot read the rule at '{text[position:]}' "
                             f"(expected DEFAULT or RULE:pattern/replacement/[LU])")
        if match.group(1):
            rules.append(_Rule(None))
        else:
            try:
                pattern = re.compile(match.group(2).replace("\\/", "/"))
            except re.error as error:
                raise ValueError(f"ssl.principal.mapping.rules: bad pattern '{match.group(2)}': {error}") from None
            rules.append(_Rule(pattern, _java_replacement(match.group(3)), match.group(4)))
        position = match.end()
    return rules or [_Rule(None)]
