"""A record's key, value and header values as a person reads them: text, pretty JSON or hex.

Pure functions over bytes. The result is plain text: escaping it for HTML is the template's job
(Jinja2's autoescape), so nothing here needs to know about markup. Bytes past `limit` are not
shown (the page offers the whole value as a download instead).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

FORMATS = ("auto", "text", "json", "hex")
DEFAULT_LIMIT = 16 * 1024
_HEX_WIDTH = 16


@dataclass(frozen=True)
class Shown:
    """What the page prints for one key, value or header value."""

    text: str | None
    """None for a null key or value (shown as such, not as an empty string)."""
    format: str
    """The format used: `auto` resolves to json, text or hex."""
    size: int
    truncated: bool


def show(data: bytes | None, fmt: str = "auto", limit: int = DEFAULT_LIMIT) -> Shown:
    """`data` in format `fmt` (one of FORMATS), cut to its first `limit` bytes."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    if data is None:
        return Shown(None, "null", 0, False)
    size = len(data)
    truncated = size > limit
    shown = data[:limit]
    if fmt == "hex":
        return Shown(hexdump(shown), "hex", size, truncated)
    text = _utf8(shown, allow_cut=truncated)
    if fmt == "text":
        return Shown(shown.decode("utf-8", errors="replace"), "text", size, truncated)
    if text is not None and not truncated:
        pretty = _pretty_json(text)
        if pretty is not None:
            return Shown(pretty, "json", size, truncated)
    if fmt == "json":
        return Shown(shown.decode("utf-8", errors="replace"), "text", size, truncated)
    if text is not None and _printable(text):
        return Shown(text, "text", size, truncated)
    return Shown(hexdump(shown), "hex", size, truncated)


def hexdump(data: bytes) -> str:
    """`hexdump -C` style lines: offset, 16 bytes in hex, the printable ASCII beside them."""
    lines = []
    for start in range(0, len(data), _HEX_WIDTH):
        chunk = data[start:start + _HEX_WIDTH]
        hex_part = " ".join(f"{byte:02x}" for byte in chunk).ljust(_HEX_WIDTH * 3 - 1)
        ascii_part = "".join(chr(byte) if 32 <= byte < 127 else "." for byte in chunk)
        lines.append(f"{start:08x}  {hex_part}  |{ascii_part}|")
    return "\n".join(lines)


def _utf8(data: bytes, allow_cut: bool) -> str | None:
    """The text, or None when it is not UTF-8 (a truncated value may end inside a character)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        if allow_cut and error.start >= len(data) - 3 and error.reason == "unexpected end of data":
            return data[:error.start].decode("utf-8")
        return None


def _pretty_json(text: str) -> str | None:
    """Indented JSON when `text` is a JSON object or array (a bare number or string stays text)."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        return json.dumps(json.loads(stripped), indent=2, ensure_ascii=False)
    except ValueError:
        return None


def _printable(text: str) -> bool:
    return all(char.isprintable() or char in "\n\r\t" for char in text)
