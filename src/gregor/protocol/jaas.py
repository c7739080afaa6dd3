"""The `sasl.jaas.config` value Kafka reads (`LoginModule flag key="value" ...;`), for brokers and clients.

Only the options matter to Gregor: PLAIN's `user_<name>="<password>"` entries (the users a
broker's listener accepts, as Kafka's default PLAIN callback reads them) and the `username` /
`password` a client (or the broker's own inter-broker client) logs in with.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_MODULE = re.compile(r"\s*([\w.$]+)\s+(required|requisite|sufficient|optional)\b", re.IGNORECASE)
_OPTION = re.compile(r'\s*([\w.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s;"]+))')

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


@dataclass(frozen=True)
class JaasConfig:
    module: str
    options: dict[str, str] = field(default_factory=dict)

    def users(self) -> dict[str, str]:
        """PLAIN's `user_<name>` entries: name -> password."""
        return {key[5:]: value for key, value in self.options.items() if key.startswith("user_") and key[5:]}


def parse_jaas(text: str, key: str = "sasl.jaas.config") -> JaasConfig:
    """One login module entry; ValueError names the key and what is wrong."""
    match = _MODULE.match(text)
    if match is None:
        raise ValueError(f"{key}: expected 'LoginModuleClass required key=\"value\" ...;', got '{text.strip()[:60]}'")
    options: dict[str, str] = {}
    position = match.end()
    while True:
        option = _OPTION.match(text, position)
        if option is None:
            break
        value = option.group(2) if option.group(2) is not None else option.group(3)
        options[option.group(1)] = re.sub(r"\\(.)", r"\1", value)
        position = option.end()
    rest = text[position:].strip()
    if rest != ";":
        raise ValueError(f"{key}: the login module entry must end with ';' after its options "
                         f"(unreadable from '{rest[:40]}')")
    return JaasConfig(match.group(1), options)
