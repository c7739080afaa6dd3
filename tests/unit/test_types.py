"""mypy passes on the packages that pyproject.toml's [tool.mypy] checks (strict on the sans-IO layers).

The cache goes to a temporary directory so the run is cold, as in CI on a clean clone, and leaves
nothing in the checkout.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

pytest.importorskip("mypy", reason="mypy is a test dependency (pip install -e .[test])")


@pytest.mark.slow
def test_mypy_passes_on_the_checked_packages(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", os.path.join(REPO, "pyproject.toml"),
         "--cache-dir", str(tmp_path / "mypy-cache"), "--no-error-summary"],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"mypy found errors:\n{result.stdout}{result.stderr}"
