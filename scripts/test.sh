#!/usr/bin/env bash
# The README's test command: install everything the tests need into .venv, then run the default (fast) suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --test
# one worker per core (pytest-xdist): the default suite takes about half the time of a serial run
"${RATES_VENV:-.venv}/bin/python" -m pytest -n auto "$@"
