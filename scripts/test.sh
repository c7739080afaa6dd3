#!/usr/bin/env bash
# Sets up gregor with its test dependencies and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
exec .venv/bin/python -m pytest -q "$@"
