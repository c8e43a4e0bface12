# Sourced by the scripts that start a service in the background and test it (schemathesis.sh,
# sdk-check.sh). `stop_service_on_exit` arms the traps: however the script ends, the service in
# SERVICE_PID gets SIGTERM (its graceful shutdown), SIGKILL after 5 s, its work folder WORK is
# removed, and the script exits with its own status (130 on Ctrl-C, 143 on SIGTERM).
# The sourcing script defines log() and START (epoch seconds) and sets WORK and SERVICE_PID.

# Nothing routes to this service by /ready: SIGTERM closes its ports at once, not after the default delay.
export SHUTDOWN_DELAY_MS=0

_stop_service_and_exit() {
  local rc=$?
  if [[ -n ${SERVICE_PID:-} ]] && kill -0 "$SERVICE_PID" 2>/dev/null; then
    kill -TERM "$SERVICE_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$SERVICE_PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$SERVICE_PID" 2>/dev/null || true
    wait "$SERVICE_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
  log "done in $(($(date +%s) - START))s (exit $rc)"
  exit "$rc"
}

stop_service_on_exit() {
  trap _stop_service_and_exit EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
}
