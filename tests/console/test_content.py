"""How a record's bytes are shown: text, pretty JSON or hex, cut at the page's limit."""

from __future__ import annotations

import pytest

from gregor.console.content import hexdump, show


def test_auto_pretty_prints_json_objects_and_keeps_other_text_as_is():
    shown = show(b'{"order":1,"items":["a"]}')
    assert shown.format == "json"
    assert shown.text == '{\n  "order": 1,\n  "items": [\n    "a"\n  ]\n}'
    assert show(b"42").format == "text"  # a bare JSON number reads better as it was written
    assert show(b"<script>alert(1)</script>").text == "<script>alert(1)</script>"  # escaping is the page's


def test_auto_falls_back_to_hex_for_binary_data():
    shown = show(bytes(range(20)))
    assert shown.format == "hex"
    assert shown.text.splitlines()[0].startswith("00000000  00 01 02 03")
    assert show("grüße".encode()).format == "text"


def test_null_is_not_an_empty_string():
    assert show(None).text is None and show(None).format == "null"
    assert show(b"").text == ""


def test_forced_formats():
    assert show(b'{"a":1}', "text").text == '{"a":1}'
    assert show(b"not json", "json").format == "text"
    assert show(b"AB", "hex").text == "00000000  41 42" + " " * 42 + "  |AB|"
    with pytest.raises(ValueError, match="unknown format"):
        show(b"x", "yaml")


def test_a_large_value_is_cut_and_says_so():
    shown = show(b"x" * 100, limit=10)
    assert (shown.text, shown.size, shown.truncated) == ("x" * 10, 100, True)
    assert show(b'{"a": "' + b"y" * 50 + b'"}', limit=20).format == "text"  # half a JSON document is text
    cut_in_a_character = "é".encode() * 10  # 2 bytes each: a limit of 5 ends inside one
    assert show(cut_in_a_character, limit=5).text == "éé"


def test_hexdump_shows_printable_ascii_beside_the_bytes():
    lines = hexdump(b"Hi\n" * 6).splitlines()
    assert lines[0].endswith("|Hi.Hi.Hi.Hi.Hi.H|")
    assert lines[1] == "00000010  69 0a" + " " * 42 + "  |i.|"  # a newline is not printed as one
