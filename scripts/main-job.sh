#!/usr/bin/env bash
# The README's main job: install into .venv, then a real predict -> run -> fit -> table pipeline on built-in data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
rates="${RATES_VENV:-.venv}/bin/rates"
out="${1:-report}"
"$rates" predict --algo signgd --a 1/2
"$rates" table --format markdown
"$rates" report default --out "$out"
