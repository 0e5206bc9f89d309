#!/usr/bin/env bash
# Install rates (and, with --test, what the test suite needs) into the current python3.
# torch is pinned to 2.13.0 first: on CPU-only machines that exact version is the local CPU wheel, and any
# looser request would make pip fetch the multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
extras=""
if [ "${1:-}" = "--test" ]; then
  extras="[test]"
  # pdflatex + booktabs for the test that compiles the generated LaTeX tables.
  if ! command -v pdflatex >/dev/null 2>&1 || ! kpsewhich booktabs.sty >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        texlive-latex-base texlive-latex-recommended >/dev/null
    else
      echo "setup: pdflatex with booktabs is missing and cannot be installed here; the LaTeX test will fail" >&2
    fi
  fi
fi
python3 -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
python3 -m pip install --quiet --disable-pip-version-check -e ".${extras}"
command -v pyenv >/dev/null 2>&1 && pyenv rehash || true
