#!/usr/bin/env bash
# Builds deploy/Dockerfile's image and runs it, as far as a machine without Docker allows: with buildah
# and podman (Debian's packages, installed when missing and run as root). Not part of `npm test` (a
# build takes minutes); test/deploy/files.test.ts and test/deploy/start.test.ts are its quick half.
#
#   bash scripts/container-check.sh [--rebuild-base]
#
# 1. The base. The official node:24-trixie-slim cannot be pulled where no container registry is
#    reachable, so a stand-in with its layout is built once (kept in the container storage as
#    localhost/node-standin:24-trixie-slim; --rebuild-base makes it again): Debian trixie (debootstrap,
#    minbase), this machine's Node 24 at /usr/local/bin/node, its npm at /usr/local/lib/node_modules/npm
#    linked from /usr/local/bin, the user node (1000:1000, /home/node). It also carries this machine's CA
#    bundle in NODE_EXTRA_CA_CERTS, which the official image needs nowhere else: here the npm registry is
#    reached through a proxy that presents this machine's own CA.
# 2. The build: `buildah bud --format docker` (the docker format keeps HEALTHCHECK) with NODE_IMAGE set to
#    the stand-in; everything else is the Dockerfile as shipped (npm ci --omit=dev against the registry).
# 3. The run, with podman, on SQLite in a named volume mounted at /data:
#    - `app/migrate.ts` as a one-shot container (compose's migrate);
#    - the services (the image's default command) on a read-only root file system with no tmpfs, the
#      volume its only writable place: PID 1 is node running app/main.ts, as uid 1000; all
#      three /ready answer 200 on their published ports; `podman healthcheck run` (the image's
#      HEALTHCHECK) says healthy; identity's dashboard script is served;
#    - `podman stop` (SIGTERM to PID 1): the process drains and exits 0 within the timeout, its log saying
#      "clean":true; the data volume holds the SQLite files, owned by uid 1000.
# What it cannot do here: use the real base image; run the compose file (no Docker engine; the compose
# file is checked by test/deploy/files.test.ts instead); PostgreSQL and nginx in containers.
# Every container, volume and temporary folder it makes is removed at the end, the images kept.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PROG=container-check.sh
BASE=localhost/node-standin:24-trixie-slim
IMAGE=localhost/spec-first-platform:check
RUN_ID=check-$$
log() { echo "[$PROG] $*" >&2; }
die() { echo "[$PROG] error: $*" >&2; exit 1; }
skip() { echo "[$PROG] SKIPPED: $*" >&2; exit 0; }

# --- 0. tools ----------------------------------------------------------------------------------------
need=()
for tool in buildah podman debootstrap; do command -v "$tool" >/dev/null || need+=("$tool"); done
if ((${#need[@]})); then
  [[ $(id -u) -eq 0 ]] || skip "${need[*]} not installed, and installing them needs root (apt-get install -y ${need[*]})"
  command -v apt-get >/dev/null || skip "${need[*]} not installed and no apt-get to install them"
  log "installing ${need[*]} (Debian's packages)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -q "${need[@]}" >&2 </dev/null || { apt-get update -q >&2 && apt-get install -y -q "${need[@]}" >&2 </dev/null; } \
    || skip "apt-get could not install ${need[*]}"
fi
[[ $(id -u) -eq 0 ]] || skip "buildah and podman run as root here (rootless needs subuid ranges this script does not set up)"
NODE=$(command -v node)
[[ $("$NODE" -p 'process.versions.node.split(".")[0]') -ge 24 ]] || die "node on PATH is $("$NODE" --version); Node 24 is needed (export PATH=\$PWD/node_modules/.bin:\$PATH)"
NPM_DIR=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
[[ -f $NPM_DIR/package.json ]] || die "cannot find npm's folder (from $(command -v npm))"

# How containers run on this machine, not what the image needs: crun refuses the machine's hybrid cgroup
# layout where runc accepts it (runc is installed with the other tools), and the sandbox lacks
# CAP_SYS_RESOURCE, so podman's default rlimits (above the machine's) cannot be set where lower ones can.
command -v runc >/dev/null || { [[ $(id -u) -eq 0 ]] && apt-get install -y -q runc >&2 </dev/null; } || skip "runc is not installed"
RUNTIME_OPTS=(--runtime runc --ulimit nofile=8192:8192 --ulimit nproc=8192:8192)

WORK=$(mktemp -d)
cleanup() {
  podman rm -f -t 0 "$RUN_ID-services" "$RUN_ID-migrate" >/dev/null 2>&1 || true
  podman volume rm -f "$RUN_ID-data" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# --- 1. the stand-in base ----------------------------------------------------------------------------
if [[ ${1:-} == --rebuild-base ]] || ! buildah inspect --type image "$BASE" >/dev/null 2>&1; then
  log "building the stand-in base $BASE (debootstrap trixie minbase, Node $("$NODE" --version), npm $(npm --version))"
  rootfs=$WORK/rootfs
  debootstrap --variant=minbase trixie "$rootfs" http://deb.debian.org/debian >"$WORK/debootstrap.log" 2>&1 \
    || { tail -n 20 "$WORK/debootstrap.log" >&2; die "debootstrap trixie failed"; }
  install -m 0755 "$(readlink -f "$NODE")" "$rootfs/usr/local/bin/node"
  mkdir -p "$rootfs/usr/local/lib/node_modules"
  cp -a "$NPM_DIR" "$rootfs/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"
  chroot "$rootfs" groupadd --gid 1000 node
  chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  mkdir -p "$rootfs/usr/local/share/ca-certificates-machine"
  cp /etc/ssl/certs/ca-certificates.crt "$rootfs/usr/local/share/ca-certificates-machine/ca-certificates.crt"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
  container=$(buildah from scratch)
  buildah copy --quiet "$container" "$rootfs" / >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env NODE_VERSION="$("$NODE" --version | tr -d v)" \
    --env NODE_EXTRA_CA_CERTS=/usr/local/share/ca-certificates-machine/ca-certificates.crt --cmd '["node"]' "$container"
  buildah commit --quiet --rm "$container" "$BASE" >/dev/null
  rm -rf "$rootfs"
fi

# --- 2. the build ------------------------------------------------------------------------------------
log "building $IMAGE from deploy/Dockerfile (NODE_IMAGE=$BASE)"
started=$SECONDS
buildah bud "${RUNTIME_OPTS[@]}" --quiet --format docker --network host --layers --build-arg "NODE_IMAGE=$BASE" -f deploy/Dockerfile -t "$IMAGE" . >"$WORK/build.log" 2>&1 \
  || { tail -n 40 "$WORK/build.log" >&2; die "buildah bud failed"; }
log "built in $((SECONDS - started)) s; image size $(podman image inspect "$IMAGE" --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}')"

# --- 3. the run --------------------------------------------------------------------------------------
failures=0
check() { # check <what> <command...>: runs the command, counts a failure when it fails
  local what=$1
  shift
  if "$@"; then log "ok: $what"; else log "FAILED: $what"; failures=$((failures + 1)); fi
}
free_port() { "$NODE" -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

podman volume create "$RUN_ID-data" >/dev/null
check "app/migrate.ts as a one-shot container" \
  podman run "${RUNTIME_OPTS[@]}" --no-healthcheck --rm --name "$RUN_ID-migrate" -v "$RUN_ID-data:/data" "$IMAGE" app/migrate.ts >&2

declare -A PORT=([identity]=$(free_port) [repository]=$(free_port) [email]=$(free_port))
# A read-only root file system with no tmpfs (Kubernetes' readOnlyRootFilesystem): the volume is all it
# writes. The HEALTHCHECK is run below by hand: podman's timer for it needs systemd as the init (podman
# logs that it has none to podman.log, shown on a failure).
podman run "${RUNTIME_OPTS[@]}" -d --name "$RUN_ID-services" --read-only --read-only-tmpfs=false --health-interval=disable \
  -v "$RUN_ID-data:/data" -e SHUTDOWN_DELAY_MS=1000 \
  -p "127.0.0.1:${PORT[identity]}:3001" -p "127.0.0.1:${PORT[repository]}:3002" -p "127.0.0.1:${PORT[email]}:3003" \
  "$IMAGE" >/dev/null 2>>"$WORK/podman.log"

ready() {
  local s
  for s in identity repository email; do
    [[ $(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${PORT[$s]}/ready") == 200 ]] || return 1
  done
}
deadline=$((SECONDS + 180))
until ready; do
  [[ $(podman inspect "$RUN_ID-services" --format '{{.State.Running}}') == true ]] || { podman logs "$RUN_ID-services" >&2; die "the services' container exited"; }
  ((SECONDS < deadline)) || { podman logs "$RUN_ID-services" >&2; die "/ready did not answer 200 on all three within 180 s"; }
  sleep 0.5
done
log "all three /ready answer 200 through the published ports ($((SECONDS - deadline + 180)) s after the start)"

pid1=$(podman exec "$RUN_ID-services" cat /proc/1/cmdline | tr '\0' ' ')
check "PID 1 is node running app/main.ts (it is: $pid1)" grep -Eq '^node app/main\.ts $' <<<"$pid1"
user=$(podman exec "$RUN_ID-services" id -u)
check "the process runs as uid 1000 (it is: $user)" test "$user" = 1000
check "the image's HEALTHCHECK says healthy" podman healthcheck run "$RUN_ID-services"
check "identity's dashboard script is served" \
  test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:${PORT[identity]}/dashboard/app.js")" = 200
check "nothing under /app is writable by the process" \
  podman exec "$RUN_ID-services" sh -c '! find /app -writable -print -quit | grep -q .'

stop_started=$SECONDS
podman stop -t 35 "$RUN_ID-services" >/dev/null 2>>"$WORK/podman.log"
code=$(podman inspect "$RUN_ID-services" --format '{{.State.ExitCode}}')
check "SIGTERM to PID 1 stops it with exit 0 (exit $code after $((SECONDS - stop_started)) s)" test "$code" = 0
check "its log says it drained cleanly" grep -q '"clean":true' <(podman logs "$RUN_ID-services" 2>&1)
check "the SQLite files are in the /data volume, owned by uid 1000" \
  podman run "${RUNTIME_OPTS[@]}" --no-healthcheck --rm -v "$RUN_ID-data:/data" --entrypoint sh "$IMAGE" -c 'ls -ln /data | grep -q " 1000 1000 .*identity.sqlite"'

if ((failures)); then
  cat "$WORK/podman.log" >&2
  podman logs "$RUN_ID-services" 2>&1 | tail -n 20 >&2
  die "$failures check(s) failed"
fi
log "the image built on the stand-in base and every check passed"
