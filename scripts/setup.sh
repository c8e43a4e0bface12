#!/usr/bin/env bash
# Installs the project's npm dependencies on a fresh machine (safe to re-run: a no-op when current).
# The test run installs its own extras (PostgreSQL, the schemathesis venv) when it needs them.
set -euo pipefail
cd "$(dirname "$0")/.."

# Prebuilt native binaries cannot be downloaded here, so better-sqlite3 builds from source:
# point node-gyp at this machine's Node headers instead of letting it try to download them.
node_prefix=$(dirname "$(dirname "$(command -v node)")")
if [ -f "$node_prefix/include/node/node.h" ]; then export npm_config_nodedir="$node_prefix"; fi

if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.package-lock.json.source 2>/dev/null; then
  npm ci --no-audit --no-fund
  cp package-lock.json node_modules/.package-lock.json.source
fi
node -e 'require("better-sqlite3")(":memory:").close()' || { echo "better-sqlite3 did not build; see README (Native modules)" >&2; exit 1; }
echo "setup: dependencies installed"
