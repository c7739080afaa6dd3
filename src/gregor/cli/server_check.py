"""`gregor server --check-config`: what a start would make of the configuration, without starting:
the keys nothing reads (each with its likely intended key) and the values that differ from the
defaults, so a typo or a forgotten override shows before the broker runs."""

from __future__ import annotations

from gregor.broker.config import BROKER_CONFIG_KEYS, BrokerConfig, is_secret
from gregor.broker.unknown_config import describe_unknown_key, unknown_keys


def changed_values(config: BrokerConfig) -> list[str]:
    """`key=value` lines for the supplied values that are not the default, and for the embedded
    node's own defaults where they are not Kafka's."""
    unknown = set(unknown_keys(config.originals))
    lines = []
    for name in sorted({name for name in config.originals if name not in unknown} | set(BROKER_CONFIG_KEYS)):
        default = config.default(name) if name in BROKER_CONFIG_KEYS else None
        if name in config.originals:
            if default is None or config.originals[name].strip() != default:
                lines.append(f"{name}={'[hidden]' if is_secret(name) else config.originals[name]}")
        elif default != BROKER_CONFIG_KEYS[name].default:
            lines.append(f"{name}={default}  (the embedded single node's default; Kafka's is "
                         f"{BROKER_CONFIG_KEYS[name].default})")
    return lines


def check_config(config: BrokerConfig) -> int:
    """Print the report on stdout; 1 when a key is unknown, else 0."""
    unknown = unknown_keys(config.originals)
    changed = changed_values(config)
    print("Unknown keys:" if unknown else "No unknown keys.")
    for name in unknown:
        print(f"  {describe_unknown_key(name)}")
    print("Values that differ from the defaults:" if changed else "Every value is the default.")
    for line in changed:
        print(f"  {line}")
    return 1 if unknown else 0
