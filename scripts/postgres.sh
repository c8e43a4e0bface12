#!/usr/bin/env bash
# Throwaway PostgreSQL cluster for tests.
#
#   scripts/postgres.sh start <dir>            -> prints DATABASE_URL (one line on stdout), also in <dir>/url
#   scripts/postgres.sh stop <dir>             -> stops the cluster and removes <dir>
#   scripts/postgres.sh createdb <dir> <name>  -> creates another database, prints its URL
#   scripts/postgres.sh url <dir>              -> prints the URL of a started cluster
#
# - Installs Debian's PostgreSQL (apt-get) when no initdb/pg_ctl is found (needs root).
# - The server runs as a non-root user (`postgres` when run as root; created if missing),
#   listens only on 127.0.0.1 on a free port, no Unix socket, fsync off, password (scram)
#   auth for 127.0.0.1 only.
# - The URL's user (`postgres`) is a superuser, so a test harness can create one database per
#   test file:  psql "$DATABASE_URL" -c 'CREATE DATABASE t1'  (or with the `pg` client:
#   `await client.query('CREATE DATABASE "t1"')`), then swap the path of the URL to /t1;
#   or simply `scripts/postgres.sh createdb <dir> t1`.
# - Idempotent: `start` on a running cluster prints its URL again; `stop` on a missing <dir>
#   does nothing. Everything but the URL goes to stderr; the server log is <dir>/postgres.log.
set -euo pipefail

PROG=${0##*/}
MARKER=.throwaway-postgres
DB_NAME=test
DB_USER=postgres

die() { echo "$PROG: error: $*" >&2; exit 1; }
note() { echo "$PROG: $*" >&2; }
usage() {
  sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# --- locating (or installing) the server binaries ---------------------------------------------
find_bindir() {
  local d
  # Debian keeps the real binaries in /usr/lib/postgresql/<ver>/bin (newest version first);
  # PATH may have them too (e.g. a /usr/local/bin symlink on some machines).
  for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5 -n -r); do
    if [[ -x $d/initdb && -x $d/pg_ctl && -x $d/postgres ]]; then echo "$d"; return 0; fi
  done
  if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
    d=$(dirname "$(readlink -f "$(command -v pg_ctl)")")
    if [[ -x $d/initdb && -x $d/pg_ctl ]]; then echo "$d"; return 0; fi
  fi
  return 1
}

install_postgres() {
  [[ $(id -u) -eq 0 ]] || die "PostgreSQL (initdb, pg_ctl) is not installed and installing it needs root: run 'apt-get install -y postgresql' first."
  command -v apt-get >/dev/null 2>&1 || die "PostgreSQL (initdb, pg_ctl) is not installed and apt-get is not available to install it."
  note "PostgreSQL not found: installing Debian's postgresql package (apt-get)..."
  # Do not let the package create (and start) its default cluster on port 5432: we only want the binaries.
  if [[ ! -e /etc/postgresql-common/createcluster.conf ]]; then
    mkdir -p /etc/postgresql-common
    echo "create_main_cluster = false" >/etc/postgresql-common/createcluster.conf
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >&2 || die "apt-get update failed"
  apt-get install -y -q -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
    postgresql </dev/null >&2 || die "apt-get install postgresql failed"
}

BINDIR=
ensure_binaries() {
  BINDIR=$(find_bindir) || { install_postgres; BINDIR=$(find_bindir) || die "PostgreSQL installed but initdb/pg_ctl not found under /usr/lib/postgresql/*/bin"; }
}

# --- running as a non-root user --------------------------------------------------------------
RUN_USER=
ensure_user() {
  if [[ $(id -u) -ne 0 ]]; then RUN_USER=$(id -un); return; fi
  RUN_USER=postgres
  if ! id -u "$RUN_USER" >/dev/null 2>&1; then
    note "creating system user '$RUN_USER' (PostgreSQL refuses to run as root)"
    useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$RUN_USER" \
      || die "could not create the '$RUN_USER' system user"
  fi
}

# Runs a command as RUN_USER from / (its cwd may be unreadable to that user).
as_user() {
  if [[ $(id -u) -eq 0 ]]; then
    (cd / && runuser -u "$RUN_USER" -- "$@")
  else
    (cd / && "$@")
  fi
}

# The run user must be able to reach <dir>: grant search (x, not read) on ancestors that lack it.
ensure_reachable() {
  local dir=$1 p
  [[ $(id -u) -eq 0 ]] || return 0
  p=$dir
  while [[ $p != / ]]; do
    p=$(dirname "$p")
    if ! as_user test -x "$p"; then
      note "granting search permission on $p to '$RUN_USER' (chmod o+x) so it can reach $dir"
      chmod o+x "$p" || die "cannot make $p reachable for user '$RUN_USER'"
    fi
  done
}

free_port() {
  if command -v node >/dev/null 2>&1; then
    node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
  elif command -v python3 >/dev/null 2>&1; then
    python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'
  else
    die "need node or python3 to pick a free port"
  fi
}

abs_dir() {
  local d=$1
  [[ -n $d ]] || usage
  case $d in /*) ;; *) d=$PWD/$d ;; esac
  echo "${d%/}"
}

is_running() { [[ -f $1/data/postmaster.pid ]] && as_user "$BINDIR/pg_ctl" -D "$1/data" status >/dev/null 2>&1; }

psql_url() { # url sql...
  local url=$1; shift
  PGCONNECT_TIMEOUT=10 "$BINDIR/psql" -X -q -v ON_ERROR_STOP=1 "$url" "$@" </dev/null
}

cmd_start() {
  local dir; dir=$(abs_dir "${1:-}")
  ensure_binaries
  ensure_user
  if [[ -e $dir && ! -d $dir ]]; then die "$dir exists and is not a directory"; fi
  if [[ -d $dir && -n $(ls -A "$dir") && ! -e $dir/$MARKER ]]; then
    die "$dir is not empty and was not created by $PROG: refusing to use it (give a new or empty directory)"
  fi

  if [[ -f $dir/url && -f $dir/data/PG_VERSION ]]; then
    if is_running "$dir"; then
      note "already running in $dir"
      cat "$dir/url"
      return 0
    fi
    note "restarting the existing cluster in $dir"
    as_user "$BINDIR/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 start >&2 \
      || { tail -n 20 "$dir/postgres.log" >&2 || true; die "PostgreSQL did not start (log: $dir/postgres.log)"; }
    cat "$dir/url"
    return 0
  fi

  # A half-made directory from an interrupted start: begin again.
  if [[ -e $dir/$MARKER ]]; then
    is_running "$dir" && as_user "$BINDIR/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$dir"
  fi
  mkdir -p "$dir"
  touch "$dir/$MARKER"
  ensure_reachable "$dir"
  [[ $(id -u) -eq 0 ]] && chown "$RUN_USER": "$dir"
  chmod 700 "$dir"

  local password
  password=$(head -c 18 /dev/urandom | od -An -tx1 | tr -d ' \n')
  local pwfile=$dir/.pwfile
  (umask 077 && printf '%s\n' "$password" >"$pwfile")
  [[ $(id -u) -eq 0 ]] && chown "$RUN_USER": "$pwfile"

  as_user "$BINDIR/initdb" -D "$dir/data" -U "$DB_USER" --pwfile="$pwfile" \
    --auth-host=scram-sha-256 --auth-local=reject -E UTF8 --locale=C.UTF-8 --no-sync >"$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; die "initdb failed (log: $dir/initdb.log)"; }
  rm -f "$pwfile"

  # Only 127.0.0.1 may connect, with the password.
  cat >"$dir/data/pg_hba.conf" <<'EOF'
# TYPE  DATABASE  USER  ADDRESS        METHOD
host    all       all   127.0.0.1/32   scram-sha-256
EOF

  local port attempt
  for attempt in 1 2 3; do
    port=$(free_port)
    cat >"$dir/data/postgresql.auto.conf" <<EOF
# written by $PROG
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = ''
fsync = off
synchronous_commit = off
full_page_writes = off
max_connections = 200
EOF
    [[ $(id -u) -eq 0 ]] && chown -R "$RUN_USER": "$dir"
    if as_user "$BINDIR/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" -w -t 60 start >&2; then
      break
    fi
    if grep -q "could not bind\|Address already in use" "$dir/postgres.log" 2>/dev/null && [[ $attempt -lt 3 ]]; then
      note "port $port was taken meanwhile, trying another"
      continue
    fi
    tail -n 20 "$dir/postgres.log" >&2 || true
    die "PostgreSQL did not start (log: $dir/postgres.log)"
  done

  local admin_url="postgres://$DB_USER:$password@127.0.0.1:$port/postgres"
  local i
  for i in $(seq 1 50); do
    if "$BINDIR/pg_isready" -q -h 127.0.0.1 -p "$port" -t 2 </dev/null; then break; fi
    [[ $i -eq 50 ]] && die "PostgreSQL on 127.0.0.1:$port is not accepting connections (log: $dir/postgres.log)"
    sleep 0.2
  done
  psql_url "$admin_url" -c "CREATE DATABASE \"$DB_NAME\"" >&2 || die "could not create database $DB_NAME"

  local url="postgres://$DB_USER:$password@127.0.0.1:$port/$DB_NAME"
  (umask 077 && printf '%s\n' "$url" >"$dir/url.tmp" && mv "$dir/url.tmp" "$dir/url")
  note "PostgreSQL $("$BINDIR/postgres" --version | awk '{print $3}') running in $dir on 127.0.0.1:$port"
  echo "$url"
}

cmd_stop() {
  local dir; dir=$(abs_dir "${1:-}")
  if [[ ! -e $dir ]]; then note "$dir does not exist: nothing to stop"; return 0; fi
  [[ -d $dir ]] || die "$dir is not a directory"
  if [[ ! -e $dir/$MARKER ]]; then
    if [[ -z $(ls -A "$dir") ]]; then rmdir "$dir"; return 0; fi
    die "$dir was not created by $PROG: refusing to remove it"
  fi
  if [[ -f $dir/data/postmaster.pid ]]; then
    ensure_binaries
    ensure_user
    if as_user "$BINDIR/pg_ctl" -D "$dir/data" status >/dev/null 2>&1; then
      as_user "$BINDIR/pg_ctl" -D "$dir/data" -m fast -w -t 60 stop >&2 \
        || { note "fast stop failed, stopping immediately"; as_user "$BINDIR/pg_ctl" -D "$dir/data" -m immediate -w stop >&2 || true; }
    fi
  fi
  rm -rf "$dir"
  note "stopped and removed $dir"
}

cmd_url() {
  local dir; dir=$(abs_dir "${1:-}")
  [[ -f $dir/url ]] || die "no cluster started in $dir (no $dir/url)"
  cat "$dir/url"
}

cmd_createdb() {
  local dir; dir=$(abs_dir "${1:-}")
  local name=${2:-}
  [[ $name =~ ^[A-Za-z_][A-Za-z0-9_]{0,62}$ ]] || die "database name must match [A-Za-z_][A-Za-z0-9_]* (got '${name}')"
  [[ -f $dir/url ]] || die "no cluster started in $dir (no $dir/url): run '$PROG start $dir' first"
  ensure_binaries
  local url base
  url=$(cat "$dir/url")
  base=${url%/*}
  if [[ -z $(psql_url "$base/postgres" -tA -c "SELECT 1 FROM pg_database WHERE datname = '$name'") ]]; then
    psql_url "$base/postgres" -c "CREATE DATABASE \"$name\"" >&2 || die "could not create database $name"
  fi
  echo "$base/$name"
}

case ${1:-} in
  start) shift; [[ $# -eq 1 ]] || usage; cmd_start "$1" ;;
  stop) shift; [[ $# -eq 1 ]] || usage; cmd_stop "$1" ;;
  url) shift; [[ $# -eq 1 ]] || usage; cmd_url "$1" ;;
  createdb) shift; [[ $# -eq 2 ]] || usage; cmd_createdb "$1" "$2" ;;
  *) usage ;;
esac
