#!/usr/bin/env bash
# Install everything, then run the default test suite (slow tests excluded: add `-m slow` for them).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
bash scripts/lint.sh  # ruff check and ruff format --check: a finding fails the run before any test
export OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export VPEVAL_CACHE=${VPEVAL_CACHE:-$(mktemp -d)/cache}
workers=${VPEVAL_TEST_WORKERS:-2}
exec .venv/bin/python -m pytest -n "$workers" -q "$@"
