#!/usr/bin/env bash
# Install the core and ONE plugin the way a third party would: from their folders, into a fresh virtual
# environment, WITH the dependencies their pyproject.toml files declare (requirements.lock only as
# constraints, so pip takes the tested versions from its cache). Then import the plugin, check that
# `vpeval plugins` lists it unbroken, and run its tests (the contract suite included) against the
# installed copy. Fails when the plugin imports something it does not declare.
#
#   bash scripts/check-plugin-install.sh [PLUGIN_FOLDER]    (default: plugins/anonymizers/mcadams)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
plugin=$(cd "${1:-plugins/anonymizers/mcadams}" && pwd)
PYTHON=${PYTHON:-python3}
started=$(date +%s)

work=$(mktemp -d "${TMPDIR:-/tmp}/vpeval-plugin-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$PYTHON" -m venv --without-pip "$work/venv"
py="$work/venv/bin/python"
# pip from outside drives the new environment (pip >= 22.3): no pip of its own to bootstrap.
if "$PYTHON" -m pip --python "$py" --version > /dev/null 2>&1; then
  pip=("$PYTHON" -m pip --python "$py")
else
  "$py" -m ensurepip -q
  pip=("$py" -m pip)
fi
pip+=(install -q --disable-pip-version-check --no-compile -c "$repo/requirements.lock")

# Build from clean copies: setuptools reuses a source folder's build/, which can hold deleted modules,
# and the repository stays untouched.
copy() { mkdir -p "$2"; tar -C "$1" --exclude=build --exclude='*.egg-info' --exclude=__pycache__ -cf - "${@:3}" | tar -C "$2" -xf -; }
copy "$repo" "$work/src/vpeval" pyproject.toml README.md core
copy "$plugin" "$work/src/plugin" .
# The build backend first, so the two builds below need no isolated build environment of their own.
"${pip[@]}" "setuptools>=68,<81"
# Wheels, not editable installs: the check must see what a built distribution contains.
"${pip[@]}" --no-build-isolation "$work/src/vpeval" "$work/src/plugin" pytest
# The test references requirements.lock marks `# no-deps` that this plugin's pyproject.toml names (its test extra):
# installed as scripts/install.sh installs them, without their dependencies, for its tests to compare against.
for reference in $(grep '# no-deps' "$repo/requirements.lock" | cut -d'#' -f1); do
  if grep -q "\"${reference%%==*}[<>=~!]" "$plugin/pyproject.toml"; then
    "${pip[@]}" --no-deps --no-build-isolation "$reference"
  fi
done

distribution=$("$py" -c 'import sys, tomllib; print(tomllib.load(open(sys.argv[1], "rb"))["project"]["name"])' \
  "$plugin/pyproject.toml")
packages=$(find "$plugin" -mindepth 2 -maxdepth 2 -name __init__.py -not -path '*/tests/*' -printf '%h\n' | xargs -n1 basename)
echo "installed vpeval and $distribution with their declared dependencies into a fresh environment"

cd "$work"  # nothing from the repository on sys.path from here on
for package in $packages; do
  "$py" -c "import $package" || { echo "import $package failed in the fresh environment" >&2; exit 1; }
done
"$work/venv/bin/vpeval" plugins --json > plugins.json
"$py" - "$distribution" <<'EOF'
import json, sys
listed = json.load(open("plugins.json"))
mine = [p for p in listed["plugins"] if p["distribution"] == sys.argv[1]]
broken = [b for b in listed.get("broken", []) if sys.argv[1] in json.dumps(b)]
if broken or not mine:
    sys.exit(f"vpeval plugins does not list {sys.argv[1]} as working: {broken or 'absent'}")
print("vpeval plugins lists " + ", ".join(f"{p['kind']} {p['name']}" for p in mine))
EOF
cp -r "$plugin/tests" "$work/tests"
"$work/venv/bin/pytest" -q -p no:cacheprovider -m "not slow" tests
echo "plugin install check passed in $(( $(date +%s) - started )) s"
