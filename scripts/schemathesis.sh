#!/usr/bin/env bash
# Fuzz a service against its OpenAPI document with schemathesis.
#
#   bash scripts/schemathesis.sh [repository|identity|email] [extra `st run` options...]
#
# The service defaults to repository. For either one the script:
# 1. Creates .venv/ (if missing) and installs the exact pins of requirements-fuzz.txt into it
#    (again whenever that file changes).
# 2. Starts the service on a free 127.0.0.1 port with a fresh DATA_DIR (SQLite) and
#    VALIDATE_RESPONSES=true; with DATABASE_URL set it uses that PostgreSQL database instead
#    (e.g. DATABASE_URL=$(scripts/postgres.sh start /tmp/pg) bash scripts/schemathesis.sh).
# 3. Makes the fixtures the operations need and exports their tokens and ids for the config:
#    - repository (fuzz/schemathesis.toml): a user (logged in), a build agent, a repository;
#      user operations carry the user's token, poll/reportResult the agent's;
#    - identity (fuzz/identity.toml): an organization and its admin (the admin command), then
#      over HTTP (fuzz/identity-fixtures.ts) an admin token through the dashboard's own OAuth
#      flow, a confidential application with webhooks and a delivery, and signed-in users;
#    - email (fuzz/email.toml): the first API key (the admin command), then over HTTP
#      (fuzz/email-fixtures.ts) a test key for sending, a delivered message with its tracking
#      tokens, suppressions from a real hard bounce and complaint, a webhook with a delivery.
#    Then runs schemathesis with that config (fixed seed, 100 cases per operation and phase, all
#    checks, one worker).
# 4. Stops the service (also on failure or Ctrl-C) and exits non-zero when schemathesis found
#    a failure. JUnit report: .tmp/schemathesis[-identity|-email][-postgres]/junit.xml (-postgres with
#    DATABASE_URL, so a run on each database can go at once); service log: service.log there.
#
# Environment: DATABASE_URL (optional), FUZZ_SPEC (another copy of the document), FUZZ_MAX_EXAMPLES (overrides max-examples),
# FUZZ_WORKERS (overrides workers), PYTHON (interpreter for the venv, default python3).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PROG=schemathesis.sh
SERVICE=repository
case ${1:-} in
  repository | identity | email) SERVICE=$1; shift ;;
esac
case $SERVICE in
  repository) SPEC=${FUZZ_SPEC:-generated/openapi/repository.yaml}; CONFIG=fuzz/schemathesis.toml; OUT=$ROOT/.tmp/schemathesis ;;
  identity) SPEC=${FUZZ_SPEC:-generated/openapi/identity.yaml}; CONFIG=fuzz/identity.toml; OUT=$ROOT/.tmp/schemathesis-identity ;;
  email) SPEC=${FUZZ_SPEC:-generated/openapi/email.yaml}; CONFIG=fuzz/email.toml; OUT=$ROOT/.tmp/schemathesis-email ;;
esac
[[ -n ${DATABASE_URL:-} ]] && OUT=$OUT-postgres
REQS=requirements-fuzz.txt
VENV=$ROOT/.venv
PYTHON=${PYTHON:-python3}

log() { echo "[$PROG] $*" >&2; }
die() { echo "[$PROG] error: $*" >&2; exit 1; }

START=$(date +%s)
[[ -f $SPEC ]] || die "$SPEC not found (run npm run generate)"
[[ -f $CONFIG ]] || die "$CONFIG not found"
command -v node >/dev/null || die "node is not installed"
command -v curl >/dev/null || die "curl is not installed"

# --- 1. the venv -----------------------------------------------------------------------------
# shellcheck source=lib/python-venv.sh
source "$ROOT/scripts/lib/python-venv.sh"
ensure_venv "$VENV" "$REQS" st || exit 1

if [[ ! -d node_modules/tsx ]]; then
  log "node_modules missing: running npm ci"
  npm_config_nodedir=${npm_config_nodedir:-/usr} npm ci --no-audit --no-fund >&2 || die "npm ci failed"
fi

# --- 2. the service --------------------------------------------------------------------------
rm -rf "$OUT"
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/schemathesis.XXXXXX")
SERVICE_PID=
# shellcheck source=lib/service-process.sh
source "$ROOT/scripts/lib/service-process.sh"
stop_service_on_exit

PORT=$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
BASE=http://127.0.0.1:$PORT
export HOST=127.0.0.1 DATA_DIR=$WORK/data VALIDATE_RESPONSES=true LOG_LEVEL=${LOG_LEVEL:-warn}
if [[ -n ${DATABASE_URL:-} ]]; then
  export DATABASE_URL
  log "using PostgreSQL (DATABASE_URL is set)"
else
  unset DATABASE_URL
fi

# Accounts that must exist before the service starts (the admin commands write to its database).
if [[ $SERVICE == repository ]]; then
  export REPOSITORY_PORT=$PORT REPOSITORY_PUBLIC_URL=$BASE
  # The account of the spec's own login example, so that the examples (and the stateful links
  # that follow a login) exercise a successful login and refresh, not only 401s. On a reused
  # PostgreSQL database it may exist already: then the login below tells whether it is usable.
  EMAIL=ada@example.com
  PASSWORD="correct horse battery staple"
  # The fuzzer sends many wrong passwords, for this account and for made-up ones, all from
  # 127.0.0.1: keep the sign-in throttle (429, tested in conformance: X-RB-6, X-RB-9) from turning
  # every later login into a 429.
  export LOGIN_MAX_FAILURES=1000 LOGIN_ADDRESS_MAX_FAILURES=100000
  if ! echo "$PASSWORD" | node --import tsx app/admin.ts repository create-user "$EMAIL" >"$WORK/create-user.log" 2>&1; then
    [[ -n ${DATABASE_URL:-} ]] || { cat "$WORK/create-user.log" >&2; die "could not create the user $EMAIL"; }
    log "could not create $EMAIL (exists already in this database?): trying to log in with it"
  fi
elif [[ $SERVICE == email ]]; then
  export EMAIL_PORT=$PORT EMAIL_PUBLIC_URL=$BASE
  # The inbound SMTP listener (bounce and complaint reports, the simulator's included) on any free
  # port, and the simulator's reports at once rather than after a second, for the fixtures.
  export EMAIL_INBOUND_SMTP_PORT=0 EMAIL_SIMULATOR_REPORT_DELAY_MS=50
  # No relay, no sink, no sending domain: the deployment's defaults. Webhook targets stay https-only
  # and public-only (the fixtures' hosts are under .invalid and never resolve).
  unset EMAIL_SMTP_URL EMAIL_TRANSPORT EMAIL_SENDING_DOMAINS EMAIL_RATE_LIMIT_PER_SECOND WEBHOOK_ALLOW_PRIVATE_TARGETS WEBHOOK_REQUIRE_HTTPS
  # The first API key, as an operator makes it; it is the fixtures' and the fuzzer's key.
  FUZZ_API_KEY=$(node --import tsx app/admin.ts email create-api-key "fuzz admin $(date +%s)" 2>"$WORK/create-api-key.log") \
    || { cat "$WORK/create-api-key.log" >&2; die "could not create the first API key"; }
else
  export IDENTITY_PORT=$PORT IDENTITY_PUBLIC_URL=$BASE
  # Webhook fixtures point at a closed port on 127.0.0.1 (deliveries fail at once, no receiver
  # needed): allow that one internal address and plain http, nothing else.
  export WEBHOOK_ALLOW_PRIVATE_TARGETS=127.0.0.1 WEBHOOK_REQUIRE_HTTPS=false
  # One social provider, `fuzzhub`, enabled on the fixture application, so the social sign-in start
  # and the applications' enabledProviders reach their real logic. Its endpoints are a closed port:
  # the start only redirects there, nothing is ever fetched from it.
  export IDENTITY_SOCIAL_PROVIDERS='[{"id":"fuzzhub","name":"FuzzHub","type":"oauth2","clientId":"fuzz","clientSecret":"fuzz-secret","authorizationEndpoint":"http://127.0.0.1:9/authorize","tokenEndpoint":"http://127.0.0.1:9/token","userinfoEndpoint":"http://127.0.0.1:9/user","scope":"read:user"}]'
  # A fresh admin per run, so a reused PostgreSQL database needs no clean-up.
  EMAIL=fuzz-admin-$(date +%s)-$RANDOM@example.com
  PASSWORD=$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')
  echo "$PASSWORD" | node --import tsx app/admin.ts identity create-org "Fuzz Org" "$EMAIL" >"$WORK/create-org.log" 2>&1 \
    || { cat "$WORK/create-org.log" >&2; die "could not create the organization and its admin $EMAIL"; }
fi

log "starting the $SERVICE service on $BASE"
node --import tsx app/main.ts "$SERVICE" >"$OUT/service.log" 2>&1 &
SERVICE_PID=$!
for i in $(seq 1 150); do
  if curl -fs -o /dev/null --max-time 2 "$BASE/health" 2>/dev/null; then break; fi
  if ! kill -0 "$SERVICE_PID" 2>/dev/null; then
    tail -n 40 "$OUT/service.log" >&2 || true
    die "the service exited before answering /health (log: $OUT/service.log)"
  fi
  [[ $i -eq 150 ]] && die "the service did not answer $BASE/health within 30 s (log: $OUT/service.log)"
  sleep 0.2
done

json_field() { "$VENV/bin/python" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }
post_json() { # path body [token]
  local auth=()
  [[ -n ${3:-} ]] && auth=(-H "Authorization: Bearer $3")
  curl -fsS --max-time 10 -X POST -H 'Content-Type: application/json' "${auth[@]}" --data "$2" "$BASE$1"
}

if [[ $SERVICE == repository ]]; then
  LOGIN=$(post_json /auth/login "{\"email\":\"$EMAIL\",\"password\":\"$PASSWORD\"}") || die "login as $EMAIL failed"
  FUZZ_USER_TOKEN=$(json_field accessToken <<<"$LOGIN")
  AGENT=$(post_json /buildagent/register '{"name":"fuzz-agent"}' "$FUZZ_USER_TOKEN") || die "registering a build agent failed"
  FUZZ_AGENT_TOKEN=$(json_field agentToken <<<"$AGENT")
  REPOSITORY=$(post_json /repository "{\"name\":\"fuzz-fixture-$(date +%s)\"}" "$FUZZ_USER_TOKEN") || die "creating a repository failed"
  FUZZ_REPOSITORY_ID=$(json_field id <<<"$REPOSITORY")
  export FUZZ_USER_TOKEN FUZZ_AGENT_TOKEN FUZZ_REPOSITORY_ID
elif [[ $SERVICE == email ]]; then
  # Prints `export FUZZ_…='…'` lines: keys, ids, addresses and tokens that fuzz/email.toml reads.
  FIXTURES=$(echo "$FUZZ_API_KEY" | node --import tsx fuzz/email-fixtures.ts "$BASE") || die "making the email fixtures failed"
  eval "$FIXTURES"
  export FUZZ_API_KEY
  printf '"%s"\n' "$FUZZ_EMAIL_ID" >"$OUT/email-ids.dict"
  printf '"%s"\n' "$FUZZ_RECIPIENT" >"$OUT/recipients.dict"
  printf '"%s"\n' "$FUZZ_OPEN_TOKEN" >"$OUT/open-tokens.dict"
  printf '"%s"\n' "$FUZZ_CLICK_TOKEN" >"$OUT/click-tokens.dict"
  printf '"%s"\n' "$FUZZ_BOUNCED_ADDRESS" "$FUZZ_COMPLAINED_ADDRESS" "$FUZZ_MANUAL_ADDRESS" >"$OUT/suppressed.dict"
  printf '"%s"\n' "$FUZZ_MANUAL_ADDRESS" "$FUZZ_COMPLAINED_ADDRESS" >"$OUT/doomed-suppressed.dict"
  printf '"%s"\n' "$FUZZ_WEBHOOK_ID" >"$OUT/webhook-ids.dict"
  printf '"%s"\n' "$FUZZ_DELIVERY_ID" >"$OUT/delivery-ids.dict"
  printf '"%s"\n' "$FUZZ_DOOMED_WEBHOOK_ID" >"$OUT/doomed-webhook-ids.dict"
else
  # Prints `export FUZZ_…='…'` lines: tokens and ids that fuzz/identity.toml reads.
  FIXTURES=$(echo "$PASSWORD" | node --import tsx fuzz/identity-fixtures.ts "$BASE" "$EMAIL") || die "making the identity fixtures failed"
  eval "$FIXTURES"
  # Ids of the fixtures as schemathesis dictionaries (libFuzzer format) for fuzz/identity.toml:
  # unlike fixed parameters, they leave the stateful phase free to use the ids it created.
  printf '"%s"\n' "$FUZZ_CLIENT_ID" >"$OUT/client-ids.dict"
  printf '"%s"\n' "$FUZZ_SPARE_APP_ID" >"$OUT/app-ids.dict"
  printf '"%s"\n' "$FUZZ_WEBHOOK_ID" >"$OUT/webhook-ids.dict"
  printf '"%s"\n' "$FUZZ_DELIVERY_ID" >"$OUT/delivery-ids.dict"
  printf '"%s"\n' "$FUZZ_DOOMED_APP_ID" >"$OUT/doomed-app-ids.dict"
  printf '"%s"\n' "$FUZZ_DOOMED_WEBHOOK_ID" >"$OUT/doomed-webhook-ids.dict"
  printf '"%s"\n' "$FUZZ_REQUEST_ID" >"$OUT/request-ids.dict"
fi

# --- 3. schemathesis -------------------------------------------------------------------------
ST_ARGS=(--url "$BASE" --report junit,har --report-junit-path "$OUT/junit.xml" --report-har-path "$OUT/requests.har" --no-color)
[[ -n ${FUZZ_MAX_EXAMPLES:-} ]] && ST_ARGS+=(--max-examples "$FUZZ_MAX_EXAMPLES")
[[ -n ${FUZZ_WORKERS:-} ]] && ST_ARGS+=(--workers "$FUZZ_WORKERS")

# Hypothesis' own caches (unicode tables) go to the ignored .tmp/, not to a .hypothesis/ here.
export HYPOTHESIS_STORAGE_DIRECTORY=$ROOT/.tmp/hypothesis
log "running schemathesis $("$VENV/bin/st" --version | awk '{print $3}') against $BASE"
set +e
"$VENV/bin/st" --config-file "$CONFIG" run "$SPEC" "${ST_ARGS[@]}" "$@" </dev/null
ST_RC=$?
set -e

if ! kill -0 "$SERVICE_PID" 2>/dev/null; then
  log "the service died during the run (log: $OUT/service.log)"
  tail -n 40 "$OUT/service.log" >&2 || true
  [[ $ST_RC -eq 0 ]] && ST_RC=1
fi
if grep -q '"level":50' "$OUT/service.log" 2>/dev/null; then
  log "the service logged errors (level 50) during the run: see $OUT/service.log"
fi
[[ $ST_RC -eq 0 ]] && log "schemathesis: no failures" || log "schemathesis found failures (exit $ST_RC)"
exit "$ST_RC"
