#!/usr/bin/env bash
# Memory and start of one or more proxy binaries, as a user runs them (no allocator environment
# variables), measured in one run with the binaries alternated.
#
#   benches/memory.sh BINARY...            # e.g. target/release/mcp-search-proxy /tmp/old-build
#
# For each round and binary:
#   - 557 tools (`deployment.json`): peak RSS (VmHWM) at ready and after 3 s of `mcp_call` load
#     at c=16;
#   - 11,739 tools (`real-11k.json`, pages of 500, with a manifest): peak RSS at ready (the first
#     refresh), after 3 `mcp_refresh`, and the current RSS then;
#   - start → `/readyz` 200 from that manifest, the upstream down (median of 5), and the peak RSS
#     of such a start.
# With EMBED_MODEL set (a model directory, e.g. models/all-MiniLM-L6-v2), the semantic arm instead:
#   - 557 tools and 11,739 tools, no manifest (every tool embedded from scratch): peak RSS until
#     `/readyz` says `semantic: ready`, the current RSS then, and the seconds it took.
# Prints one JSON line per measurement, then one line per binary with the medians over the rounds.
#
# Environment: ROUNDS (default 2), CATALOGS (default ../shared/bench/catalogs), LOAD (the load
# generator; default: built with `cargo build --release --bench load`), UPSTREAM_BIN (the binary
# that serves `demo-upstream`; default: the last BINARY), EMBED_MODEL (see above).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
(($# > 0)) || { echo "usage: benches/memory.sh BINARY..." >&2; exit 2; }
BINS=("$@")
ROUNDS="${ROUNDS:-2}"
CATALOGS="${CATALOGS:-$ROOT/../shared/bench/catalogs}"
SMALL="$CATALOGS/deployment.json"
BIG="$CATALOGS/real-11k.json"
for f in "$SMALL" "$BIG"; do [[ -f "$f" ]] || { echo "memory.sh: missing $f (set CATALOGS)" >&2; exit 1; }; done
UPSTREAM_BIN="${UPSTREAM_BIN:-${BINS[-1]}}"
# shellcheck source=benches/lib.sh
source "$ROOT/benches/lib.sh"
load_generator

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-memory.XXXXXX")"
PIDS=()
cleanup() { kill "${PIDS[@]}" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
wait_ready() { # url [tries of 50 ms]
  for _ in $(seq "${2:-1200}"); do curl -sf -o /dev/null "$1" && return 0; sleep 0.05; done
  echo "memory.sh: $1 not ready" >&2; exit 1
}
hwm() { awk '/^VmHWM:/{print $2}' "/proc/$1/status"; }
rss() { awk '/^VmRSS:/{print $2}' "/proc/$1/status"; }
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
emit() { printf '{"binary":"%s","round":%s,"what":"%s","value":%s}\n' "$1" "$2" "$3" "$4" | tee -a "$WORK/cells.jsonl"; }
refresh() {
  curl -sf --max-time 120 -o /dev/null "$1" -H 'Content-Type: application/json' \
    -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-06-18' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_refresh","arguments":{}}}'
}

UP_S=$(free_port)
"$UPSTREAM_BIN" demo-upstream --bind "127.0.0.1:$UP_S" --catalog "$SMALL" >"$WORK/up-small.log" 2>&1 &
PIDS+=("$!")
UP_B=$(free_port)
"$UPSTREAM_BIN" demo-upstream --bind "127.0.0.1:$UP_B" --catalog "$BIG" --page-size 500 >"$WORK/up-big.log" 2>&1 &
UP_B_PID=$!
PIDS+=("$UP_B_PID")
sleep 1

# The medians per binary and measurement: `report` reads, on stdin, the Python lines (indented
# by 4) that print one binary's line from `m` (medians) and `mb(k)` (a median in MiB).
REPORT_PRELUDE=$(cat <<'PY'
import collections, json, statistics, sys
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    c = json.loads(line)
    rows[int(c["binary"])][c["what"]].append(c["value"])
for i, name in enumerate(sys.argv[2:]):
    m = {k: statistics.median(v) for k, v in rows[i].items()}
    mb = lambda k: f"{m[k] / 1024:.1f}"
PY
)
report() { { printf '%s\n' "$REPORT_PRELUDE"; cat; } | python3 - "$WORK/cells.jsonl" "${BINS[@]}"; }

proxy() { # binary port upstream-url manifest -> pid
  UPSTREAMS="bench=$3" CATALOG_TTL_SEC=0 REFRESH_MIN_INTERVAL_SEC=0 LOG_LEVEL=warn PORT="$2" \
    BIND_ADDR=127.0.0.1 MANIFEST_PATH="$4" EMBED_MODEL="${EMBED_MODEL:-}" "$1" serve >>"$WORK/proxy.log" 2>&1 &
  echo $!
}

if [[ -n "${EMBED_MODEL:-}" ]]; then
  semantic() { # binary round label upstream-url: peak until the semantic arm is ready
    local p pid t0 peak=0 h
    p=$(free_port); t0=$(date +%s%N)
    pid=$(proxy "$1" "$p" "$4" ""); PIDS+=("$pid")
    for _ in $(seq 6000); do # 10 minutes at most
      h=$(hwm "$pid"); ((h > peak)) && peak=$h
      curl -sf "http://127.0.0.1:$p/readyz" 2>/dev/null | grep -q '"semantic":"ready"' && break
      sleep 0.1
    done
    curl -sf "http://127.0.0.1:$p/readyz" | grep -q '"semantic":"ready"' || { echo "memory.sh: semantic arm not ready" >&2; exit 1; }
    emit "$i" "$2" "${3}_seconds" "$(( ($(date +%s%N) - t0) / 1000000000 ))"
    sleep 1
    emit "$i" "$2" "${3}_hwm_kb" "$(hwm "$pid")"
    emit "$i" "$2" "${3}_rss_kb" "$(rss "$pid")"
    stop "$pid"
  }
  for r in $(seq "$ROUNDS"); do
    for i in "${!BINS[@]}"; do
      semantic "${BINS[$i]}" "$r" sem_small "http://127.0.0.1:$UP_S/mcp"
      semantic "${BINS[$i]}" "$r" sem_big "http://127.0.0.1:$UP_B/mcp"
    done
  done
  report <<'PY'
    print(f"{name}: semantic arm, 557 tools peak/settled {mb('sem_small_hwm_kb')}/{mb('sem_small_rss_kb')} MiB "
          f"({m['sem_small_seconds']:.0f} s); 11,739 tools peak/settled {mb('sem_big_hwm_kb')}/{mb('sem_big_rss_kb')} MiB "
          f"({m['sem_big_seconds']:.0f} s)")
PY
  exit 0
fi

for r in $(seq "$ROUNDS"); do
  for i in "${!BINS[@]}"; do
    bin="${BINS[$i]}"
    # 557 tools
    p=$(free_port); pid=$(proxy "$bin" "$p" "http://127.0.0.1:$UP_S/mcp" ""); PIDS+=("$pid")
    wait_ready "http://127.0.0.1:$p/readyz"; sleep 1
    emit "$i" "$r" small_ready_hwm_kb "$(hwm "$pid")"
    "$LOAD" --url "http://127.0.0.1:$p/mcp" --mode proxy-call --concurrency 16 --duration 3 --warmup 1 \
      --tool datadog-get_incident --args '{"incidentId":"INC-1"}' --json >/dev/null
    emit "$i" "$r" small_load_hwm_kb "$(hwm "$pid")"
    stop "$pid"
    # 11,739 tools, first refresh then three more
    m="$WORK/manifest-$i.json"; rm -f "$m" "$m.vectors"
    p=$(free_port); pid=$(proxy "$bin" "$p" "http://127.0.0.1:$UP_B/mcp" "$m"); PIDS+=("$pid")
    wait_ready "http://127.0.0.1:$p/readyz"; sleep 0.5
    emit "$i" "$r" big_ready_hwm_kb "$(hwm "$pid")"
    for _ in 1 2 3; do refresh "http://127.0.0.1:$p/mcp"; done
    sleep 0.5
    emit "$i" "$r" big_refresh_hwm_kb "$(hwm "$pid")"
    emit "$i" "$r" big_refresh_rss_kb "$(rss "$pid")"
    stop "$pid"
    # start from the manifest, the upstream down (an unused port)
    dead=$(free_port); starts=()
    for _ in 1 2 3 4 5; do
      p=$(free_port)
      t0=$(date +%s%N); pid=$(proxy "$bin" "$p" "http://127.0.0.1:$dead/mcp" "$m"); PIDS+=("$pid")
      for _ in $(seq 4000); do curl -sf -o /dev/null "http://127.0.0.1:$p/readyz" && break; sleep 0.002; done
      starts+=($(( ($(date +%s%N) - t0) / 1000000 )))
      sleep 0.3; h=$(hwm "$pid"); stop "$pid"
    done
    emit "$i" "$r" manifest_start_ms "$(printf '%s\n' "${starts[@]}" | sort -n | sed -n 3p)"
    emit "$i" "$r" manifest_start_hwm_kb "$h"
  done
done

report <<'PY'
    print(f"{name}: 557 tools peak RSS ready/after load {mb('small_ready_hwm_kb')}/{mb('small_load_hwm_kb')} MiB; "
          f"11,739 tools ready/after 3 refreshes {mb('big_ready_hwm_kb')}/{mb('big_refresh_hwm_kb')} MiB "
          f"(current {mb('big_refresh_rss_kb')}); start from manifest {m['manifest_start_ms']:.0f} ms, "
          f"peak {mb('manifest_start_hwm_kb')} MiB")
PY
