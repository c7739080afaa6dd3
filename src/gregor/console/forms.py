"""The console's form fields checked and converted, with one readable line for each mistake."""

from __future__ import annotations

from datetime import datetime, timezone
from urllib.parse import parse_qsl


class FormError(ValueError):
    """A field the operator can fix; the message names it."""


def parse_form(body: bytes) -> dict[str, str]:
    """An application/x-www-form-urlencoded body (the only kind the console's forms post)."""
    return dict(parse_qsl(body.decode("utf-8", errors="replace"), keep_blank_values=True))


def optional_int(text: str | None, field: str, minimum: int | None = None) -> int | None:
    """An integer field left blank is None; anything else must be an integer >= `minimum`."""
    if text is None or not text.strip():
        return None
    try:
        value = int(text.strip())
    except ValueError:
        raise FormError(f"{field} must be a whole number, got {text.strip()!r}") from None
    if minimum is not None and value < minimum:
        raise FormError(f"{field} must be at least {minimum}, got {value}")
    return value


def required_int(text: str | None, field: str, minimum: int | None = None) -> int:
    value = optional_int(text, field, minimum)
    if value is None:
        raise FormError(f"{field} is required")
    return value


def properties(text: str, field: str) -> dict[str, str]:
    """`key=value` lines (blank lines and # comments skipped), as a Kafka properties file."""
    result: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise FormError(f"{field}, line {number}: expected key=value, got {line!r}")
        result[key.strip()] = value.strip()
    return result


def headers(text: str) -> list[tuple[str, bytes]]:
    """Record headers as `key=value` lines; a key may repeat, as Kafka headers may."""
    result = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise FormError(f"headers, line {number}: expected key=value, got {line.strip()!r}")
        result.append((key.strip(), value.encode("utf-8")))
    return result


_TIME_FORMATS = ("%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d")


def timestamp_ms(text: str | None, field: str) -> int | None:
    """A time as the page's datetime field sends it (UTC), or milliseconds since the epoch."""
    if text is None or not text.strip():
        return None
    text = text.strip()
    if text.isdigit():
        return int(text)
    body = text[:-1] if text.endswith("Z") else text
    for pattern in _TIME_FORMATS:
        try:
            parsed = datetime.strptime(body, pattern).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
        return int(parsed.timestamp() * 1000)
    raise FormError(f"{field} must be a time like 2024-01-31T12:00:00 (UTC) or milliseconds since the epoch, "
                    f"got {text!r}")
