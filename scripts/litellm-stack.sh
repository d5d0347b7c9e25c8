#!/usr/bin/env bash
# A real LiteLLM MCP gateway (litellm[proxy]==1.108.7, no database) in front of two upstream MCP
# servers, all on 127.0.0.1, for tests/litellm.rs and for trying the proxy against LiteLLM by hand:
#   upstream "matrix"  tests/peers/upstreams/py_upstream.py (Python SDK, stateful, SSE):
#                      echo, add, counter (per MCP session), fail, image
#   upstream "mail"    tests/peers/upstreams/py_mail.py (Python SDK, stateful, SSE)
#   LiteLLM            http://127.0.0.1:$LITELLM_PORT/mcp/ (master key sk-test), tools named
#                      matrix-add, mail-send_message, ...
#
# Usage: scripts/litellm-stack.sh start|stop|status
#   start   starts the three processes in the background and waits (bounded by STACK_TIMEOUT)
#           until LiteLLM's /mcp/ answers an initialize with 200; prints LITELLM_URL=... last
#   stop    stops them by their recorded PIDs (SIGTERM, SIGKILL after 5 s)
#   status  prints which are running
# Environment:
#   STACK_DIR      config, logs/ and pids/ (default: target-litellm-stack/ in the repository)
#   LITELLM_PORT   default 4000; MATRIX_PORT, MAIL_PORT default 0 (a free port each)
#   STACK_TIMEOUT  seconds to wait for each process (default 90)
#   OWNER_PID      when set, a watchdog stops the stack once that process is gone, or after
#                  STACK_MAX_SEC (default 1800) at the latest (used by tests/litellm.rs)
#   LITELLM_VENV   default .venv-litellm (scripts/install-test-peers.sh installs it)
#   PEER_PYTHON    the Python with `mcp` 2.x for the upstreams (default .venv/bin/python)
#
# Try the proxy against it:
#   scripts/litellm-stack.sh start
#   UPSTREAMS='litellm=http://127.0.0.1:4000/mcp/|sk-test' BIND_ADDR=127.0.0.1 cargo run --release
#   scripts/litellm-stack.sh stop
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
STACK_DIR="${STACK_DIR:-$ROOT/target-litellm-stack}"
LITELLM_PORT="${LITELLM_PORT:-4000}"
MATRIX_PORT="${MATRIX_PORT:-0}"
MAIL_PORT="${MAIL_PORT:-0}"
STACK_TIMEOUT="${STACK_TIMEOUT:-90}"
STACK_MAX_SEC="${STACK_MAX_SEC:-1800}"
LITELLM_VENV="${LITELLM_VENV:-$ROOT/.venv-litellm}"
PEER_PYTHON="${PEER_PYTHON:-$ROOT/.venv/bin/python}"
NAMES=(litellm matrix mail watchdog)

log() { printf '[litellm-stack] %s\n' "$*" >&2; }
die() { printf '[litellm-stack] ERROR: %s\n' "$*" >&2; exit 1; }
pidfile() { echo "$STACK_DIR/pids/$1.pid"; }
alive() { [[ -f "$(pidfile "$1")" ]] && kill -0 "$(cat "$(pidfile "$1")")" 2>/dev/null; }

stop_one() {
  local name=$1 f pid
  f="$(pidfile "$name")"
  [[ -f "$f" ]] || return 0
  pid="$(cat "$f")"
  if kill -0 "$pid" 2>/dev/null; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$pid" 2>/dev/null; then
      log "$name (pid $pid) ignored SIGTERM; SIGKILL"
      kill -9 "$pid" 2>/dev/null || true
    fi
    log "stopped $name (pid $pid)"
  fi
  rm -f "$f"
}

stop_all() {
  # The watchdog first, so that it does not race the stop.
  stop_one watchdog
  for n in litellm matrix mail; do stop_one "$n"; done
}

# start NAME CMD...: in the background, own process group, output to logs/NAME.log.
start_bg() {
  local name=$1
  shift
  setsid "$@" >"$STACK_DIR/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$(pidfile "$name")"
}

# wait_ready NAME: the READY line of a matrix upstream (tests/peers/upstreams/_serve.py); prints the URL.
wait_ready() {
  local name=$1 t0=$SECONDS url
  while :; do
    url="$(awk '/^READY /{print $2; exit}' "$STACK_DIR/logs/$name.log" 2>/dev/null || true)"
    [[ -n "$url" ]] && { echo "$url"; return 0; }
    alive "$name" || { tail -20 "$STACK_DIR/logs/$name.log" >&2; die "$name exited during startup"; }
    ((SECONDS - t0 < STACK_TIMEOUT)) || die "$name not ready after ${STACK_TIMEOUT}s (logs: $STACK_DIR/logs/$name.log)"
    sleep 0.1
  done
}

INIT='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"litellm-stack","version":"0"}}}'

start_all() {
  [[ -x "$LITELLM_VENV/bin/litellm" ]] || die "$LITELLM_VENV/bin/litellm is missing: run scripts/install-test-peers.sh"
  [[ -x "$PEER_PYTHON" ]] || die "$PEER_PYTHON is missing: run scripts/install-test-peers.sh"
  command -v curl >/dev/null 2>&1 || die "curl is needed"
  command -v setsid >/dev/null 2>&1 || die "setsid (util-linux) is needed"
  mkdir -p "$STACK_DIR/logs" "$STACK_DIR/pids"
  for n in "${NAMES[@]}"; do
    alive "$n" && die "$n is already running (pid $(cat "$(pidfile "$n")")); run '$0 stop' first"
  done
  # A failed start leaves nothing running.
  trap 'stop_all' EXIT

  local t0=$SECONDS
  start_bg matrix "$PEER_PYTHON" "$ROOT/tests/peers/upstreams/py_upstream.py" --port "$MATRIX_PORT"
  start_bg mail "$PEER_PYTHON" "$ROOT/tests/peers/upstreams/py_mail.py" --port "$MAIL_PORT"
  local matrix_url mail_url
  matrix_url="$(wait_ready matrix)"
  mail_url="$(wait_ready mail)"
  log "upstreams up: matrix $matrix_url, mail $mail_url ($((SECONDS - t0)) s)"

  cat >"$STACK_DIR/config.yaml" <<EOF
# Written by scripts/litellm-stack.sh. LiteLLM as an MCP aggregator, no database.
model_list: []
mcp_servers:
  matrix:
    url: "$matrix_url"
    transport: "http"
    description: "matrix test upstream (echo, add, counter, fail, image)"
  mail:
    url: "$mail_url"
    transport: "http"
    description: "mail test upstream"
general_settings:
  master_key: sk-test
EOF

  local t1=$SECONDS
  # LITELLM_LOCAL_MODEL_COST_MAP: skip the remote price-map download (unreachable here; ~10 s of retries).
  LITELLM_LOCAL_MODEL_COST_MAP=True start_bg litellm "$LITELLM_VENV/bin/litellm" \
    --config "$STACK_DIR/config.yaml" --host 127.0.0.1 --port "$LITELLM_PORT"
  local url="http://127.0.0.1:$LITELLM_PORT/mcp/" code
  while :; do
    code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 -X POST "$url" \
      -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
      -H 'Authorization: Bearer sk-test' --data-binary "$INIT" 2>/dev/null || true)"
    [[ "$code" == 200 ]] && break
    alive litellm || { tail -30 "$STACK_DIR/logs/litellm.log" >&2; die "litellm exited during startup"; }
    ((SECONDS - t1 < STACK_TIMEOUT)) || die "litellm /mcp/ not ready after ${STACK_TIMEOUT}s (last HTTP $code; logs: $STACK_DIR/logs/litellm.log)"
    sleep 0.25
  done
  log "litellm up: $url ($((SECONDS - t1)) s; stack $((SECONDS - t0)) s)"
  trap - EXIT

  if [[ -n "${OWNER_PID:-}" ]]; then
    # Stop the stack when the owner (a test process) is gone, even if it could not clean up.
    # shellcheck disable=SC2016 # expanded by the inner bash, from its arguments
    setsid bash -c '
      owner=$1 max=$2 script=$3; shift 3
      end=$((SECONDS + max))
      while kill -0 "$owner" 2>/dev/null && ((SECONDS < end)); do sleep 1; done
      rm -f "$STACK_DIR/pids/watchdog.pid"
      exec "$script" stop
    ' watchdog "$OWNER_PID" "$STACK_MAX_SEC" "$ROOT/scripts/litellm-stack.sh" \
      >"$STACK_DIR/logs/watchdog.log" 2>&1 </dev/null &
    echo $! >"$(pidfile watchdog)"
  fi
  echo "MATRIX_URL=$matrix_url"
  echo "MAIL_URL=$mail_url"
  echo "LITELLM_URL=$url"
}

export STACK_DIR
case "${1:-}" in
  start) start_all ;;
  stop) stop_all ;;
  status)
    for n in "${NAMES[@]}"; do
      if alive "$n"; then echo "$n running (pid $(cat "$(pidfile "$n")"))"; else echo "$n not running"; fi
    done
    ;;
  *)
    sed -n '2,/^set -euo/p' "$0" | sed '$d' >&2
    exit 64
    ;;
esac
