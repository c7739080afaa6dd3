"""README.md's code blocks as tests read them: a block is named by a marker line right above it,
`<!-- snippet: NAME (...) -->`, so that editing the prose around it cannot move a test onto
another block."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"
FENCE = "```python\n"


def snippet(name: str) -> str:
    """The code of the ```python block right below the line `<!-- snippet: NAME ...-->`."""
    text = README.read_text(encoding="utf-8")
    markers = list(re.finditer(rf"^<!-- snippet: {re.escape(name)}\b.*-->\n", text, re.MULTILINE))
    assert len(markers) == 1, f"README.md needs exactly one '<!-- snippet: {name} -->' marker"
    start = markers[0].end()
    assert text.startswith(FENCE, start), f"the snippet marker '{name}' must stand right above a ```python block"
    return text[start + len(FENCE):text.index("\n```\n", start) + 1]


def against(code: str, bootstrap: str) -> str:
    """The snippet pointed at a test broker instead of the README's localhost:9092."""
    assert "localhost:9092" in code
    return code.replace("localhost:9092", bootstrap)
