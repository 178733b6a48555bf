#!/usr/bin/env bash
# Install vpeval into .venv at the repository root: the exact versions of requirements.lock, then the core
# and every distribution under plugins/<group>/<name>/ and lib/<name>/ (plugins and the libraries they share), editable. The
# pyproject.toml files declare version ranges; the lock is what is tested. Idempotent: a second call with
# nothing changed takes seconds.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "creating .venv with $($PYTHON --version)"
  "$PYTHON" -m venv .venv
fi
plugins=$( (find plugins -mindepth 3 -maxdepth 3 -name pyproject.toml -printf '%h\n'; find lib -mindepth 2 -maxdepth 2 -name pyproject.toml -printf '%h\n') 2>/dev/null | sort)
stamp=.venv/.vpeval-installed
want=$(cat requirements.lock pyproject.toml $(printf '%s/pyproject.toml ' $plugins) | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
echo "installing the locked dependencies (first time: a few minutes)"
# Lines marked `# no-deps` are test references, published model code the tests compare against, whose declared
# dependencies clash with the lock (speakerlab's numpy<2) or are never imported by the files the tests use: they
# go in after the rest, without them, built (s3prl is an sdist) with the lock's setuptools.
.venv/bin/python -m pip install -q --disable-pip-version-check -r <(grep -v '# no-deps' requirements.lock)
references=$(grep '# no-deps' requirements.lock | cut -d'#' -f1 || true)
if [ -n "$references" ]; then
  .venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation $references
fi
# --no-deps: requirements.lock already installed an exact version inside every declared range
# (tests/test_packaging.py checks that it does).
args=(-e .)
for p in $plugins; do args+=(-e "$p"); done
.venv/bin/python -m pip install -q --disable-pip-version-check --no-deps --no-build-isolation "${args[@]}"
echo "$want" > "$stamp"
echo "installed vpeval and $(echo "$plugins" | grep -c . || true) plugin and library distributions into .venv"
