"""The README's Python client snippet runs as written (against a test broker) in a fresh
interpreter and prints the record it sent; with a broker's embedded defaults its one poll is
enough. The Spark snippet is run by tests/spark/test_readme_snippet.py, with the Spark session
the Spark tests share."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.docs.readme import against, snippet


def test_the_python_client_snippet_prints_the_record(broker):
    result = subprocess.run([sys.executable, "-c", against(snippet("python-client"), broker.bootstrap)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    assert any(re.fullmatch(r"\d+ \d+ b'user-1' b'hello'", line) for line in lines), lines
