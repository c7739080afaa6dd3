#!/usr/bin/env bash
# Sets up gregor and starts a single-node broker with the embedded defaults (localhost:9092, ./data).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/gregor server "$@"
