#!/usr/bin/env bash
# `docker compose config`-style check of a compose file without Docker (no engine runs on these
# machines): scripts/compose-config/, a small Go program on compose-go (the library docker compose
# loads files with), built once into .tools/compose-config-<go.sum hash>/ (ignored by git), as
# scripts/oasdiff.sh builds oasdiff: a fresh clone gets it on its first `npm test`.
#
#   bash scripts/compose-config.sh <compose file>     prints the resolved project as JSON, exit 1 on a problem
#   bash scripts/compose-config.sh --path             builds it if needed, prints the binary's path
#
# The build needs Go >= 1.26 (the machine's, or the one `npm run setup` put in .go/: scripts/lib/go.sh)
# and the Go module proxy; it takes under a minute once.
set -euo pipefail

# shellcheck source=lib/go.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/go.sh"
SRC=$_GO_LIB_ROOT/scripts/compose-config
# A new pin (go.mod, go.sum) or a change to the program builds a new binary beside the old one.
VERSION=$(cat "$SRC/go.mod" "$SRC/go.sum" "$SRC/main.go" | sha256sum | cut -c1-12)
DIR=$_GO_LIB_ROOT/.tools/compose-config-$VERSION
BIN=$DIR/compose-config

# _build_compose_config <file>: the program, built into <file>.
_build_compose_config() {
  (cd "$SRC" && "$GO" build -o "$1" .)
}

build_once "$BIN" compose-config _build_compose_config || exit 1

if [[ ${1:-} == --path ]]; then
  echo "$BIN"
  exit 0
fi
exec "$BIN" "$@"
