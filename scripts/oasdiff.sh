#!/usr/bin/env bash
# Runs oasdiff (github.com/oasdiff/oasdiff, the Go tool), building the pinned version into
# .tools/oasdiff-<version>/ (ignored by git) first when it is missing, as scripts/schemathesis.sh
# does with its venv: a fresh clone gets it on its first `npm test`.
#
#   bash scripts/oasdiff.sh <oasdiff arguments...>      e.g. breaking old.yaml new.yaml --format json
#   bash scripts/oasdiff.sh --path                      installs if needed, prints the binary's path
#
# The build needs Go >= 1.26 (what oasdiff v1.36.0's go.mod asks) and the Go module proxy (or
# GOPROXY/GOFLAGS pointing at a mirror): the machine's go when recent enough, else the one
# `npm run setup` installed into .go/ (scripts/lib/go.sh). It takes a minute or two once; later
# runs start at once.
set -euo pipefail

OASDIFF_VERSION=v1.36.0   # the pin: bump it here, the next run builds it beside the old one

# shellcheck source=lib/go.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/go.sh"
BIN=$(go_tool github.com/oasdiff/oasdiff "$OASDIFF_VERSION") || { echo "[oasdiff.sh] error: no oasdiff $OASDIFF_VERSION" >&2; exit 1; }

if [[ ${1:-} == --path ]]; then
  echo "$BIN"
  exit 0
fi
exec "$BIN" "$@"
