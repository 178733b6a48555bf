#!/usr/bin/env bash
# Lint and format check of the whole tree (rules and reasons: [tool.ruff] in pyproject.toml).
# `bash scripts/lint.sh --fix` applies ruff's safe fixes and formats instead of checking.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--fix" ]; then
  .venv/bin/ruff check --fix .
  exec .venv/bin/ruff format .
fi
.venv/bin/ruff check .
.venv/bin/ruff format --check .
