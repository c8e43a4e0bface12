#!/usr/bin/env bash
# The SDK check (`npm run test:sdk`, a step of `npm test`): clients generated from every SDK
# document (generated/sdk/openapi/*.yaml, made by `npm run generate`) compile, and work.
#
#   bash scripts/sdk-check.sh
#
# 1. TypeScript: openapi-typescript (with --default-non-nullable false, as `npm run generate` and
#    docs/contributing.md, "SDKs", do) writes the types of each document; with openapi-fetch's
#    createClient they are type-checked by tsc (strict), together with test/sdk/repository-smoke.ts.
# 2. Python: openapi-python-client generates a client package per document (a generator warning
#    fails the check: it means a piece of the API is missing from the client); mypy --strict
#    type-checks every package together with test/sdk/repository_smoke.py. The tools come from
#    requirements-sdk.txt (exact pins), installed into .venv/ next to schemathesis.
# 3. Go: oapi-codegen (pinned below; built once into .tools/ from the Go module proxy, as oasdiff is)
#    generates a client package per document with its default settings (an enum constant whose name
#    two enums share gets the type's name as prefix); `go build` and `go vet` check every package
#    together with test/sdk/go/repository_smoke.go, in the module test/sdk/go/go.mod pins (go.sum
#    committed: nothing beyond the Go module proxy is fetched, and nothing unpinned). The Go is the
#    machine's when recent enough, else the one `npm run setup` installed into .go/ (lib/go.sh).
# 4. A scripted run of each client against a running repository service (SQLite in a temporary
#    directory, a free 127.0.0.1 port): log in, create a repository, read the typed 409 `conflict`
#    of a second create with the same name, find the repository in the list.
# Output: .tmp/sdk-check/ (generated clients, service.log). Exit non-zero when any part failed.
#
# Environment: PYTHON (interpreter for the venv, default python3).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PROG=sdk-check.sh
REQS=requirements-sdk.txt
VENV=$ROOT/.venv
PYTHON=${PYTHON:-python3}
OUT=$ROOT/.tmp/sdk-check
OAPI_CODEGEN_VERSION=v2.8.2   # the Go generator's pin: bump it here, the next run builds it beside the old one
export PATH=$ROOT/node_modules/.bin:$PATH
# shellcheck source=lib/go.sh
source "$ROOT/scripts/lib/go.sh"

log() { echo "[$PROG] $*" >&2; }
die() { echo "[$PROG] error: $*" >&2; exit 1; }

START=$(date +%s)
DOCS=(generated/sdk/openapi/*.yaml)
[[ -f ${DOCS[0]} ]] || die "no SDK documents in generated/sdk/openapi (run npm run generate)"

# --- the venv (shared with scripts/schemathesis.sh) ----------------------------------------------
# shellcheck source=lib/python-venv.sh
source "$ROOT/scripts/lib/python-venv.sh"
ensure_venv "$VENV" "$REQS" openapi-python-client mypy || exit 1

rm -rf "$OUT"
mkdir -p "$OUT/ts" "$OUT/py" "$OUT/go"
failed=()
part() { # name command...: runs one part, records a failure, goes on
  local name=$1
  shift
  if "$@"; then log "$name: ok"; else log "$name: FAILED"; failed+=("$name"); fi
}

# --- 1. TypeScript -------------------------------------------------------------------------------
typescript_clients() {
  local doc name
  for doc in "${DOCS[@]}"; do
    name=$(basename "$doc" .yaml)
    openapi-typescript "$doc" --default-non-nullable false --output "$OUT/ts/$name.ts" >"$OUT/ts/$name.log" 2>&1 \
      || { cat "$OUT/ts/$name.log" >&2; return 1; }
    cat >"$OUT/ts/$name-client.ts" <<EOF
import createClient from "openapi-fetch";
import type { paths } from "./$name.ts";
/** A typed client of the $name SDK document. */
export const client = createClient<paths>({ baseUrl: "http://127.0.0.1:1" });
EOF
  done
  cat >"$OUT/ts/tsconfig.json" <<EOF
{
  "compilerOptions": {
    "target": "ES2023", "module": "NodeNext", "moduleResolution": "NodeNext", "strict": true,
    "noUncheckedIndexedAccess": true, "noEmit": true, "allowImportingTsExtensions": true,
    "skipLibCheck": true, "types": ["node"], "lib": ["ES2023", "DOM"]
  },
  "files": [$(for d in "${DOCS[@]}"; do printf '"%s-client.ts", ' "$(basename "$d" .yaml)"; done)"../../../test/sdk/repository-smoke.ts"]
}
EOF
  tsc -p "$OUT/ts/tsconfig.json"
}
part "TypeScript clients (openapi-typescript + openapi-fetch, tsc)" typescript_clients

# --- 2. Python -----------------------------------------------------------------------------------
python_clients() {
  local doc name packages=() ok=0
  for doc in "${DOCS[@]}"; do
    name=$(basename "$doc" .yaml | tr - _)_client
    if ! "$VENV/bin/openapi-python-client" generate --path "$doc" --output-path "$OUT/py/$name" --meta none \
      --config test/sdk/openapi-python-client.yaml >"$OUT/py/$name.log" 2>&1; then
      cat "$OUT/py/$name.log" >&2; ok=1; continue
    fi
    if grep -qi "warning" "$OUT/py/$name.log"; then
      log "openapi-python-client warned about $doc:"; cat "$OUT/py/$name.log" >&2; ok=1
    fi
    packages+=(-p "$name")
  done
  (cd "$OUT/py" && MYPYPATH=$OUT/py "$VENV/bin/mypy" --strict --cache-dir "$OUT/mypy-cache" "${packages[@]}") || ok=1
  MYPYPATH=$OUT/py "$VENV/bin/mypy" --strict --cache-dir "$OUT/mypy-cache" test/sdk/repository_smoke.py || ok=1
  return $ok
}
part "Python clients (openapi-python-client, mypy --strict)" python_clients

# --- 3. Go ----------------------------------------------------------------------------------------
GO_SMOKE=$OUT/go/bin/sdkcheck
go_clients() {
  local generator doc pkg ok=0
  resolve_go || return 1
  log "Go: $("$GO" version) at $GO"
  generator=$(go_tool github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen "$OAPI_CODEGEN_VERSION") || return 1
  cp test/sdk/go/go.mod test/sdk/go/go.sum test/sdk/go/*.go "$OUT/go/"
  for doc in "${DOCS[@]}"; do
    pkg=$(basename "$doc" .yaml | tr -d -)client
    mkdir -p "$OUT/go/$pkg"
    if ! "$generator" -generate types,client -package "$pkg" -o "$OUT/go/$pkg/client.go" "$doc" >"$OUT/go/$pkg.log" 2>&1; then
      cat "$OUT/go/$pkg.log" >&2; ok=1; continue
    fi
    if grep -qi "warn" "$OUT/go/$pkg.log"; then
      log "oapi-codegen warned about $doc:"; cat "$OUT/go/$pkg.log" >&2; ok=1
    fi
  done
  # -mod=readonly: go.sum must already hold every module (no resolution at check time);
  # -buildvcs=false: the module sits inside this git checkout, whose state is not the binary's.
  (cd "$OUT/go" && GOFLAGS="-mod=readonly -buildvcs=false" "$GO" build -o bin/ ./... && GOFLAGS=-mod=readonly "$GO" vet ./...) || ok=1
  return $ok
}
part "Go clients (oapi-codegen $OAPI_CODEGEN_VERSION, go build + go vet)" go_clients

# --- 4. Scripted runs against the repository service ---------------------------------------------
WORK=$(mktemp -d "${TMPDIR:-/tmp}/sdk-check.XXXXXX")
SERVICE_PID=
# shellcheck source=lib/service-process.sh
source "$ROOT/scripts/lib/service-process.sh"
stop_service_on_exit

start_repository() {
  local port i
  port=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
  BASE=http://127.0.0.1:$port
  EMAIL=sdk-check@example.com
  PASSWORD=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
  unset DATABASE_URL
  export HOST=127.0.0.1 REPOSITORY_PORT=$port REPOSITORY_PUBLIC_URL=$BASE DATA_DIR=$WORK/data VALIDATE_RESPONSES=true LOG_LEVEL=${LOG_LEVEL:-warn}
  echo "$PASSWORD" | node --import tsx app/admin.ts repository create-user "$EMAIL" >"$OUT/create-user.log" 2>&1 \
    || { cat "$OUT/create-user.log" >&2; return 1; }
  node --import tsx app/main.ts repository >"$OUT/service.log" 2>&1 &
  SERVICE_PID=$!
  for i in $(seq 1 150); do
    curl -fs -o /dev/null --max-time 2 "$BASE/health" 2>/dev/null && return 0
    kill -0 "$SERVICE_PID" 2>/dev/null || { tail -n 40 "$OUT/service.log" >&2; return 1; }
    sleep 0.2
  done
  log "the repository service did not answer $BASE/health within 30 s"
  return 1
}
if start_repository; then
  log "repository service on $BASE"
  part "TypeScript client against the repository service" \
    bash -c 'echo "$3" | node --import tsx test/sdk/repository-smoke.ts "$1" "$2"' _ "$BASE" "$EMAIL" "$PASSWORD"
  part "Python client against the repository service" \
    bash -c 'echo "$4" | PYTHONPATH="$1" "$5" test/sdk/repository_smoke.py "$2" "$3"' _ "$OUT/py" "$BASE" "$EMAIL" "$PASSWORD" "$VENV/bin/python"
  if [[ -x $GO_SMOKE ]]; then
    part "Go client against the repository service" \
      bash -c 'echo "$4" | "$1" "$2" "$3"' _ "$GO_SMOKE" "$BASE" "$EMAIL" "$PASSWORD"
  else
    failed+=("Go client against the repository service (not built)")
  fi
else
  failed+=("repository service start")
fi

if [[ ${#failed[@]} -gt 0 ]]; then
  log "failed: ${failed[*]}"
  exit 1
fi
log "every SDK document gives a TypeScript, a Python and a Go client that type-check, and the three clients work"
