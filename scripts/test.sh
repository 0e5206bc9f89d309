#!/usr/bin/env bash
# The README's test command: install everything the tests need, then run the default (fast) suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
python3 -m pytest "$@"
