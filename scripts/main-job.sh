#!/usr/bin/env bash
# The README's main job: install, then a real predict -> run -> fit -> table pipeline on built-in data.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
out="${1:-report}"
python3 -m rates predict --algo signgd --a 1/2
python3 -m rates table --format markdown
python3 -m rates report default --out "$out"
