#!/usr/bin/env bash
# Sets up gregor with its test dependencies and runs the whole test suite, split over pytest-xdist
# workers: more workers than cores, since many tests wait on sockets and processes rather than the
# CPU. tests/conftest.py decides what runs together (a module, the Spark package, the CLI package)
# and starts the longest work first. Options given here are passed to pytest after these (e.g.
# `-n 0` runs everything in one process).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
exec .venv/bin/python -m pytest -q -n "${GREGOR_TEST_WORKERS:-3}" --dist loadscope --no-loadscope-reorder "$@"
