#!/usr/bin/env bash
# Runs the project's Go: the machine's `go` when it is recent enough, else the one `npm run setup`
# installed into .go/ (scripts/lib/go.sh says which and why). For building a Go client by hand with
# the Go the project's own checks use.
#
#   bash scripts/go.sh <go arguments...>     e.g. bash scripts/go.sh version
#   bash scripts/go.sh --path                prints the go binary's path
set -euo pipefail
# shellcheck source=lib/go.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib/go.sh"
resolve_go || exit 1
if [[ ${1:-} == --path ]]; then
  echo "$GO"
  exit 0
fi
exec "$GO" "$@"
