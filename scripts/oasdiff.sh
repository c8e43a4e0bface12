#!/usr/bin/env bash
# Runs oasdiff (github.com/oasdiff/oasdiff, the Go tool), installing the pinned version into
# .tools/oasdiff-<version>/ (ignored by git) first when it is missing, as scripts/schemathesis.sh
# does with its venv: a fresh clone gets it on its first `npm test`.
#
#   bash scripts/oasdiff.sh <oasdiff arguments...>      e.g. breaking old.yaml new.yaml --format json
#   bash scripts/oasdiff.sh --path                      installs if needed, prints the binary's path
#
# Needs Go (>= 1.26, what oasdiff v1.36.0's go.mod asks; an older go fetches that toolchain) on PATH and the Go module proxy (or GOPROXY/GOFLAGS pointing at a mirror).
# The first install takes about 90 s on 2 cores; later runs start at once.
set -euo pipefail

OASDIFF_VERSION=v1.36.0   # the pin: bump it here, the next run installs it beside the old one

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$ROOT/.tools/oasdiff-$OASDIFF_VERSION
BIN=$DIR/bin/oasdiff

die() { echo "[oasdiff.sh] error: $*" >&2; exit 1; }

if [[ ! -x $BIN ]]; then
  command -v go >/dev/null || die "Go is not installed (on Debian: apt-get install -y golang, or go.dev/dl); it builds oasdiff $OASDIFF_VERSION"
  echo "[oasdiff.sh] installing oasdiff $OASDIFF_VERSION into $DIR (go install, about 90 s)" >&2
  mkdir -p "$DIR"
  # A lock, so two test processes that start at once build it once.
  exec 9>"$DIR.lock"
  flock 9
  if [[ ! -x $BIN ]]; then
    tmp=$(mktemp -d "$DIR/bin.XXXXXX")
    GOBIN=$tmp GOFLAGS=-mod=mod go install "github.com/oasdiff/oasdiff@$OASDIFF_VERSION" >&2 \
      || { rm -rf "$tmp"; die "go install github.com/oasdiff/oasdiff@$OASDIFF_VERSION failed"; }
    rm -rf "$DIR/bin"
    mv "$tmp" "$DIR/bin"
  fi
  exec 9>&-
fi

if [[ ${1:-} == --path ]]; then
  echo "$BIN"
  exit 0
fi
exec "$BIN" "$@"
