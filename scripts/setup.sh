#!/usr/bin/env bash
# Install rates (and, with --test, what the test suite needs) into a virtualenv that this script creates
# (.venv in the repository root, or $RATES_VENV). A fresh virtualenv sees none of the machine's own
# packages, so a dependency missing from pyproject.toml fails here instead of hiding (click once did).
# torch is pinned to 2.13.0 first: on CPU-only machines that exact version is the local CPU wheel, and any
# looser request would make pip fetch the multi-GB CUDA build.
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${RATES_VENV:-.venv}"
extras=""
if [ "${1:-}" = "--test" ]; then
  extras="[test]"
  # pdflatex + booktabs for the tests that compile the generated LaTeX tables; poppler-utils (pdftotext)
  # for the tests that read back what is on the compiled pages.
  if ! command -v pdflatex >/dev/null 2>&1 || ! kpsewhich booktabs.sty >/dev/null 2>&1 \
      || ! command -v pdftotext >/dev/null 2>&1; then
    if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
      apt-get update -qq
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        texlive-latex-base texlive-latex-recommended poppler-utils >/dev/null
    else
      echo "setup: pdflatex with booktabs is missing and cannot be installed here; the LaTeX test will fail" >&2
    fi
  fi
fi
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
py="$venv/bin/python"
"$py" -m pip install --quiet --disable-pip-version-check "torch==2.13.0"
"$py" -m pip install --quiet --disable-pip-version-check -e ".${extras}"
