#!/usr/bin/env bash
# `npm test`: every check of the project, in order of cost. Each step runs even when an earlier one
# failed, so one run shows everything; the exit code is non-zero when any step failed.
#   1. generated/ equals a fresh build of spec/        5. conformance suite on SQLite and PostgreSQL
#   2. typecheck, Biome, layering, commit subjects     6. schemathesis fuzzing, all at once: the repository,
#   3. Redocly lint of every OpenAPI document, and the    identity and email services, and the repository
#      breaking-change gate (oasdiff, spec/releases/)     service on PostgreSQL
#   4. project tests (test/): Prism mocks, logs
#   4b. SDK check: a TypeScript, a Python and a Go client of every SDK document type-check and run
#   5b. the conformance suite against deployments: the real server on SQLite, and two instances on
#       PostgreSQL behind nginx, prepared with `npm run admin` as QA would
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p .tmp
# npm puts node_modules/.bin first on PATH: the Node 24 that `npm run setup` linked there, if the
# machine's own node is older (scripts/setup.sh).
node_version=$(node --version)
echo "npm test on node ${node_version} ($(command -v node))"

passed=0
failed=0
failures=()
step() {
  local name=$1
  shift
  echo
  echo "=== ${name} ==="
  local started=$SECONDS
  if "$@"; then
    echo "--- ${name}: ok ($((SECONDS - started)) s)"
  else
    echo "--- ${name}: FAILED ($((SECONDS - started)) s)"
    failures+=("$name")
  fi
}
count() { # adds "passed failed" from a JSON file via a node one-liner
  read -r p f < <(node -e "$1" 2>/dev/null || echo "0 1")
  passed=$((passed + p))
  failed=$((failed + f))
}

step "generate:check" npm run -s generate:check
# docs/configuration.md and .env.example equal what the configuration schemas say (app/config-docs.ts).
step "docs:config --check" npm run -s docs:config -- --check
step "typecheck" npm run -s typecheck
# Biome: formatting and lint rules (biome.json); `npm run format` fixes what it can.
step "lint (Biome)" npm run -s lint
# Domain modules import no Koa, server/http, handler, HTML view or knex (ARCHITECTURE.md, "Layers").
step "layers" node --import tsx scripts/check-layers.ts
# Subjects of the commits after the recorded baseline: 72 characters at most (docs/contributing.md, "Commits").
step "commit subjects" node --import tsx scripts/check-commit-subjects.ts
step "lint:openapi" npm run -s lint:openapi
# oasdiff against spec/releases/ (X-API-14): installs the pinned oasdiff into .tools/ on first use.
step "breaking changes (oasdiff)" npm run -s api:check
# The runner fails on a crashed worker, an unhandled error or a file with no tests, naming the file.
step "project tests (mocks, logs, ...)" node --import tsx scripts/vitest-runner.ts .tmp/project-tests.json test/
count 'const r=require("./.tmp/project-tests.json"); console.log(r.passed, r.failed)'
step "SDK clients (TypeScript, Python, Go)" bash scripts/sdk-check.sh
# The clause report counts the project tests' titles too (step 4's summary): a clause proved in test/ is covered.
step "conformance (SQLite + PostgreSQL)" npm run -s conformance -- --postgres --project-tests=.tmp/project-tests.json
count 'const r=require("./conformance-report.json"); console.log(r.runs.reduce((n,x)=>n+x.passed,0), r.runs.reduce((n,x)=>n+x.failed,0))'
# QA's path (docs/contributing.md, "Against a deployment (QA)"): the whole suite, in deployment mode, against the real
# server started as a deployment on SQLite, then as two instances behind nginx on PostgreSQL.
step "conformance against deployments (SQLite, PostgreSQL behind nginx)" node --import tsx scripts/conformance-deployment.ts --summary=.tmp/conformance-deployment.json
count 'const r=require("./.tmp/conformance-deployment.json"); console.log(r.passed, r.failed)'
fuzz_on_postgres() {
  local dir url status
  dir=$(mktemp -d)
  url=$(bash scripts/postgres.sh start "$dir/pg") || return 1
  DATABASE_URL=$url bash scripts/schemathesis.sh
  status=$?
  bash scripts/postgres.sh stop "$dir/pg"
  rm -rf "$dir"
  return $status
}
# The four runs at once: each is one client waiting on one service, so together they fill the two
# cores that one run leaves mostly idle, and the shorter three end within the identity run's time.
# They share .venv/ (scripts/lib/python-venv.sh installs it once, under a lock). Each writes its own
# log, printed whole after it ends.
fuzz_together() {
  local status=0 name pids=() names=(repository identity email PostgreSQL)
  bash scripts/schemathesis.sh repository >.tmp/fuzz-repository.log 2>&1 &
  pids+=($!)
  bash scripts/schemathesis.sh identity >.tmp/fuzz-identity.log 2>&1 &
  pids+=($!)
  bash scripts/schemathesis.sh email >.tmp/fuzz-email.log 2>&1 &
  pids+=($!)
  fuzz_on_postgres >.tmp/fuzz-PostgreSQL.log 2>&1 &
  pids+=($!)
  for i in 0 1 2 3; do
    name=${names[$i]}
    if wait "${pids[$i]}"; then
      echo "--- schemathesis (${name}): ok"
    else
      echo "--- schemathesis (${name}): FAILED"
      failures+=("schemathesis (${name})") # counted below as its own check
      status=1
    fi
    cat ".tmp/fuzz-${name}.log"
  done
  return $status
}
step "schemathesis (repository, identity, email; repository on PostgreSQL)" fuzz_together

# The non-vitest steps count as one check each.
for s in "generate:check" "docs:config --check" "typecheck" "lint (Biome)" "layers" "commit subjects" "lint:openapi" "breaking changes (oasdiff)" "SDK clients (TypeScript, Python, Go)" "schemathesis (repository)" "schemathesis (identity)" "schemathesis (email)" "schemathesis (PostgreSQL)"; do
  if printf '%s\n' "${failures[@]:-}" | grep -qx "$s"; then failed=$((failed + 1)); else passed=$((passed + 1)); fi
done
if [ ${#failures[@]} -gt 0 ] && [ "$failed" -eq 0 ]; then failed=${#failures[@]}; fi

echo
if [ ${#failures[@]} -gt 0 ]; then echo "failed steps: ${failures[*]}"; fi
# The deployments' failures are named in their step's summary above; these two steps' are named here.
node --import tsx scripts/failed-tests.ts .tmp/project-tests.json conformance-report.json
echo "node ${node_version}"
# Last, and alone on its line: CI reads "N passed, N failed" as the run's count (schemathesis prints
# pytest-style "=== 1 warning in 38s ===" lines that would otherwise read as a run of no tests).
echo "${passed} passed, ${failed} failed"
[ ${#failures[@]} -eq 0 ]
