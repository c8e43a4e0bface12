#!/usr/bin/env bash
# Throwaway nginx reverse proxy for tests: a load balancer in front of service instances.
#
#   scripts/nginx.sh start <dir> <upstream>...   -> prints the proxy's URL (one line on stdout), also in <dir>/url
#   scripts/nginx.sh stop <dir>                  -> stops it and removes <dir>
#   scripts/nginx.sh install                     -> installs nginx if missing, prints the binary's path
#
# - <upstream> is host:port of an instance (127.0.0.1:3001); requests go round-robin to them.
# - Installs Debian's nginx-light (apt-get) when no nginx is found (needs root).
# - nginx runs in the foreground as one process (`daemon off`, `master_process off`) as the
#   calling user, listens only on 127.0.0.1 on a free port; its config, pid, logs and temp files
#   live in <dir>, nothing under /etc, /run or /var.
# - It sets what a production proxy sets: X-Forwarded-For (appended: $proxy_add_x_forwarded_for),
#   X-Forwarded-Proto and X-Forwarded-Host (overwritten), Host passed through.
# - Everything but the URL goes to stderr; the error and access logs are <dir>/error.log, <dir>/access.log.
set -euo pipefail

PROG=${0##*/}
die() { echo "$PROG: error: $*" >&2; exit 1; }
note() { echo "$PROG: $*" >&2; }

find_nginx() {
  command -v nginx 2>/dev/null && return 0
  [[ -x /usr/sbin/nginx ]] && { echo /usr/sbin/nginx; return 0; }
  return 1
}

install_nginx() {
  [[ $(id -u) -eq 0 ]] || die "nginx is not installed and installing it needs root: run 'apt-get install -y nginx-light' first."
  command -v apt-get >/dev/null 2>&1 || die "nginx is not installed and apt-get is not available to install it."
  note "nginx not found: installing Debian's nginx-light package (apt-get)..."
  export DEBIAN_FRONTEND=noninteractive
  # Try without an update first (fast when the lists are fresh), then with one.
  if ! apt-get install -y -q nginx-light </dev/null >&2; then
    apt-get update -q >&2 || die "apt-get update failed"
    apt-get install -y -q nginx-light </dev/null >&2 || die "apt-get install nginx-light failed"
  fi
  # The package may have started the system's nginx (port 80); we only wanted the binary.
  if [[ -f /run/nginx.pid ]]; then /usr/sbin/nginx -s stop >/dev/null 2>&1 || true; fi
}

free_port() {
  if command -v node >/dev/null 2>&1; then
    node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
  else
    python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()'
  fi
}

listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

write_config() {
  local dir=$1 port=$2; shift 2
  local servers="" u hostport='^[][A-Za-z0-9.:-]+:[0-9]+$'
  for u in "$@"; do
    [[ $u =~ $hostport ]] || die "not a host:port upstream: $u"
    servers+="    server $u max_fails=0;"$'\n'
  done
  mkdir -p "$dir/tmp"
  cat >"$dir/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 256; }
http {
  access_log $dir/access.log;
  client_body_temp_path $dir/tmp/body;
  proxy_temp_path $dir/tmp/proxy;
  fastcgi_temp_path $dir/tmp/fastcgi;
  uwsgi_temp_path $dir/tmp/uwsgi;
  scgi_temp_path $dir/tmp/scgi;
  client_max_body_size 20m;
  upstream instances {
$servers    keepalive 8;
  }
  server {
    listen 127.0.0.1:$port;
    location / {
      proxy_pass http://instances;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host \$http_host;
      proxy_set_header X-Forwarded-For \$proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto \$scheme;
      proxy_set_header X-Forwarded-Host \$http_host;
    }
  }
}
EOF
}

start() {
  local dir=${1:?usage: $PROG start <dir> <upstream>...}; shift
  (($# > 0)) || die "give at least one upstream (host:port)"
  if [[ -f $dir/url && -f $dir/nginx.pid ]] && kill -0 "$(cat "$dir/nginx.pid")" 2>/dev/null; then cat "$dir/url"; return 0; fi
  local bin; bin=$(find_nginx) || { install_nginx; bin=$(find_nginx) || die "nginx still not found after installing"; }
  mkdir -p "$dir"; dir=$(cd "$dir" && pwd)
  local attempt port pid
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    write_config "$dir" "$port" "$@"
    "$bin" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" </dev/null >>"$dir/error.log" 2>&1 &
    pid=$!
    echo "$pid" >"$dir/nginx.pid.launcher"
    for _ in $(seq 1 200); do
      listening "$port" && break
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.02
    done
    if listening "$port" && kill -0 "$pid" 2>/dev/null; then
      echo "http://127.0.0.1:$port" | tee "$dir/url"
      return 0
    fi
    kill "$pid" 2>/dev/null || true
    note "nginx did not start on port $port (attempt $attempt): $(tail -n 3 "$dir/error.log" 2>/dev/null)"
  done
  die "nginx did not start; see $dir/error.log"
}

stop() {
  local dir=${1:?usage: $PROG stop <dir>}
  [[ -d $dir ]] || return 0
  local f pid
  for f in "$dir/nginx.pid" "$dir/nginx.pid.launcher"; do
    [[ -f $f ]] || continue
    pid=$(cat "$f")
    if kill -0 "$pid" 2>/dev/null; then
      kill -QUIT "$pid" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.02; done
      kill -KILL "$pid" 2>/dev/null || true
    fi
  done
  rm -rf "$dir"
}

case ${1:-} in
  start) shift; start "$@" ;;
  stop) shift; stop "$@" ;;
  install) find_nginx || { install_nginx; find_nginx; } || die "nginx still not found after installing" ;;
  *) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
