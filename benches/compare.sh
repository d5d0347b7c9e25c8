#!/usr/bin/env bash
# One reproducible performance run of mcp-search-proxy, printed as one markdown table.
#
#   benches/compare.sh            # ~3-4 minutes after the build; see benches/README.md
#   benches/compare.sh --ab OLD_BINARY NEW_BINARY
#                                 # A/B of two builds in one run: the relay (benches/ab.sh) and
#                                 # memory and start (benches/memory.sh), cells alternated
#
# Builds in release mode, then starts everything on 127.0.0.1 and measures in this one run:
#   - a fast fake upstream (`mcp-search-proxy demo-upstream`, the 557-tool deployment catalog,
#     trivial tool implementations), called directly, through mcp-search-proxy (`mcp_call`) and
#     through FastMCP 4.2.3's proxy (`create_proxy(url, mode="auto")`, benches/fastmcp_proxy.py);
#   - `mcp_search` through the proxy on the 557- and the 11,739-tool catalogs;
#   - at concurrency 1, 16 and 64 with the closed-loop load generator benches/load.rs, plus the
#     same call at c=64 when the tool takes 5 ms (a second fake upstream, --call-delay-ms);
#   - the proxy's peak RSS (VmHWM) idle and after load with both catalogs, the time from process
#     start to /readyz 200 from an 11,739-tool manifest, and the full refresh time of 11,739 tools.
#
# Environment (all optional):
#   CARGO_TARGET_DIR  build directory (default target/)
#   DURATION, WARMUP  measured and warm-up seconds per load phase (default 5 and 1)
#   FASTMCP_DURATION, FASTMCP_WARMUP  the same for FastMCP (default 10 and 3: at c=64 one
#                     FastMCP call takes seconds, so a short window would see few replies)
#   THREADS           load generator threads (default 1)
#   BIG_PAGE_SIZE     tools/list page size of the 11,739-tool upstream (default 500)
#   SLOW_TOOL_MS      how long the tool of the extra c=64 row takes (default 5)
#   CATALOGS          catalog directory (default ../shared/bench/catalogs)
#   OUT               keep raw JSON results and logs in this directory (default: a temporary
#                     directory, removed at exit)
# The proxy runs as a user runs the binary: no allocator environment variables are set here
# (set MIMALLOC_* yourself to measure the container image's options).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if [[ "${1:-}" == "--ab" ]]; then
  OLD="${2:?usage: benches/compare.sh --ab OLD_BINARY NEW_BINARY}"
  NEW="${3:?usage: benches/compare.sh --ab OLD_BINARY NEW_BINARY}"
  "$ROOT/benches/ab.sh" "$OLD" "$NEW"
  exec "$ROOT/benches/memory.sh" "$OLD" "$NEW"
fi

TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
DURATION="${DURATION:-5}"
WARMUP="${WARMUP:-1}"
FASTMCP_WARMUP="${FASTMCP_WARMUP:-3}"
FASTMCP_DURATION="${FASTMCP_DURATION:-10}"
THREADS="${THREADS:-1}"
CATALOGS="${CATALOGS:-$ROOT/../shared/bench/catalogs}"
CAT_SMALL="$CATALOGS/deployment.json"
CAT_BIG="$CATALOGS/real-11k.json"
# A trivial upstream tool of the deployment catalog (one required string argument), and a query.
TOOL="datadog-get_incident"
TOOL_ARGS='{"incidentId":"INC-1"}'
QUERY="send an email"
CONCURRENCY=(1 16 64)
# The 11,739 definitions are 21 MB of JSON, above the proxy's default MAX_RESULT_BYTES (16 MiB)
# for one reply; the fake upstream pages its tools/list as large servers do.
BIG_PAGE_SIZE="${BIG_PAGE_SIZE:-500}"
# Duration of the tool in the extra "realistic tool" row (milliseconds).
SLOW_TOOL_MS="${SLOW_TOOL_MS:-5}"


log() { printf '[compare] %s\n' "$*" >&2; }
die() { printf '[compare] ERROR: %s\n' "$*" >&2; exit 1; }

for f in "$CAT_SMALL" "$CAT_BIG"; do [[ -f "$f" ]] || die "missing catalog $f (set CATALOGS)"; done
command -v python3 >/dev/null || die "python3 is needed (table rendering, venv)"
command -v curl >/dev/null || die "curl is needed"

if [[ -n "${OUT:-}" ]]; then
  mkdir -p "$OUT"
  WORK="$(cd "$OUT" && pwd)"
  KEEP=1
else
  WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-compare.XXXXXX")"
  KEEP=0
fi
RESULTS="$WORK/results.jsonl"
: >"$RESULTS"

# ------------------------------------------------------------------ processes and cleanup
PIDS=()
stop_pid() {
  local pid="$1" i
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  : "$i"
}
cleanup() {
  local pid
  for pid in "${PIDS[@]}"; do stop_pid "$pid"; done
  PIDS=()
  if [[ "$KEEP" == 0 ]]; then rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

forget_pid() {
  local keep=() p
  for p in "${PIDS[@]}"; do [[ "$p" == "$1" ]] || keep+=("$p"); done
  PIDS=("${keep[@]}")
}

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# Waits (bounded) until URL answers with any HTTP status (GET), or with 200 when $2 = 200.
wait_http() {
  local url="$1" want="${2:-any}" secs="${3:-60}" code deadline
  deadline=$(($(date +%s) + secs))
  while (($(date +%s) < deadline)); do
    code="$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$url" || true)"
    if [[ "$want" == any && "$code" != 000 ]] || [[ "$code" == "$want" ]]; then return 0; fi
    sleep 0.05
  done
  die "$url did not answer ${want} within ${secs}s"
}

# "VmHWM_kB VmRSS_kB" of a process.
mem_of() {
  awk '/^VmHWM:/{h=$2} /^VmRSS:/{r=$2} END{print h+0, r+0}' "/proc/$1/status"
}

# CPU time (user + system, clock ticks) of a process.
ticks_of() {
  awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$1/stat"
}
# Processes whose CPU time each load phase records, as "name:pid" words.
CPU_PIDS=()

record() { # key value... (one value: a string; several: a list)
  python3 -c 'import json,sys; v = sys.argv[2:]; print(json.dumps({"key": sys.argv[1], "value": v if len(v) != 1 else v[0]}))' "$@" >>"$RESULTS"
}

start_upstream() { # catalog port logfile [demo-upstream options...]
  local catalog="$1" port="$2" logfile="$3"
  shift 3
  "$BIN" demo-upstream --bind "127.0.0.1:$port" --catalog "$catalog" "$@" >"$logfile" 2>&1 &
  PIDS+=("$!")
  LAST_PID=$!
  wait_http "http://127.0.0.1:$port/mcp" any 60
}

start_proxy() { # upstream-url port logfile [manifest]
  UPSTREAMS="bench=$1" CATALOG_TTL_SEC=0 REFRESH_MIN_INTERVAL_SEC=0 LOG_LEVEL=warn PORT="$2" \
    BIND_ADDR=127.0.0.1 MANIFEST_PATH="${4:-}" EMBED_MODEL= "$BIN" serve >"$3" 2>&1 &
  PIDS+=("$!")
  LAST_PID=$!
}

load() { # label url mode concurrency warmup duration
  local label="$1" url="$2" mode="$3" c="$4" warm="$5" secs="$6"
  log "load: $label (${secs}s after ${warm}s warm-up)"
  local before=() after=() np
  for np in "${CPU_PIDS[@]}"; do before+=("$(ticks_of "${np#*:}")"); done
  # A phase without a single good reply still writes its JSON line (errors show in the table).
  "$LOAD" --url "$url" --mode "$mode" --concurrency "$c" --duration "$secs" --warmup "$warm" \
    --threads "$THREADS" --tool "$TOOL" --args "$TOOL_ARGS" --query "$QUERY" --label "$label" --json \
    >>"$RESULTS" || log "no successful request in $label"
  for np in "${CPU_PIDS[@]}"; do after+=("$(ticks_of "${np#*:}")"); done
  local i cpu=()
  for i in "${!CPU_PIDS[@]}"; do cpu+=("${CPU_PIDS[$i]%%:*}=$((after[i] - before[i]))"); done
  if ((${#cpu[@]} > 0)); then record "cpu $label" "${cpu[@]}"; fi
}

mcp_refresh() { # proxy-url -> "duration_ms wall_ms"
  local out
  out="$(curl -s --max-time 120 -w '\n%{time_total}' "$1" \
    -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H 'MCP-Protocol-Version: 2025-06-18' \
    -d '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_refresh","arguments":{}}}')"
  # "duration_ms wall_ms tools", or "failed wall_ms error-message" for a refresh that failed.
  printf '%s' "$out" | python3 -c '
import json, sys
body, wall = sys.stdin.read().rsplit("\n", 1)
wall = round(float(wall) * 1000, 1)
try:
    r = json.loads(body)["result"]["structuredContent"]
except (ValueError, KeyError, TypeError):
    print("failed", wall, json.dumps(body[:200]))
    sys.exit()
if "duration_ms" in r:
    print(r["duration_ms"], wall, r.get("total_tools", 0))
else:
    print("failed", wall, json.dumps(json.dumps(r.get("error", r))[:300]))'
}

# ------------------------------------------------------------------ build and peers
log "building (release) into $TARGET_DIR"
BUILD_JSON="$WORK/build.json"
CARGO_TARGET_DIR="$TARGET_DIR" cargo build --release --bins --bench load \
  --message-format=json-render-diagnostics >"$BUILD_JSON" || die "cargo build failed"
BIN="$TARGET_DIR/release/mcp-search-proxy"
LOAD="$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "load" and m.get("executable"):
        print(m["executable"])' "$BUILD_JSON" | tail -1)"
[[ -x "$BIN" && -x "$LOAD" ]] || die "build produced no binaries ($BIN, $LOAD)"

VENV_PY="$ROOT/.venv/bin/python"
if ! "$VENV_PY" -c 'import fastmcp, sys; sys.exit(fastmcp.__version__ != "4.2.3")' 2>/dev/null; then
  log "installing FastMCP 4.2.3 into .venv (scripts/install-test-peers.sh)"
  scripts/install-test-peers.sh >&2 || true
  "$VENV_PY" -c 'import fastmcp' 2>/dev/null || die "the venv has no fastmcp"
fi

record machine "$(nproc) cores, $(uname -m), $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo)"
record load_before "$(cut -d' ' -f1-3 /proc/loadavg)"
record versions "$("$BIN" --version), fastmcp $("$VENV_PY" -c 'import fastmcp; print(fastmcp.__version__)')"
T_START=$(date +%s)

# ------------------------------------------------------------------ 557 tools: direct, proxy, FastMCP
UP_PORT=$(free_port)
start_upstream "$CAT_SMALL" "$UP_PORT" "$WORK/upstream-557.log"
UP_PID=$LAST_PID
UP_URL="http://127.0.0.1:$UP_PORT/mcp"

PX_PORT=$(free_port)
start_proxy "$UP_URL" "$PX_PORT" "$WORK/proxy-557.log"
PX_PID=$LAST_PID
PX_URL="http://127.0.0.1:$PX_PORT/mcp"
wait_http "http://127.0.0.1:$PX_PORT/readyz" 200 60
sleep 1
# shellcheck disable=SC2046
record rss_557_idle $(mem_of "$PX_PID")
CPU_PIDS=("upstream:$UP_PID" "proxy:$PX_PID")

for c in "${CONCURRENCY[@]}"; do
  load "direct c=$c" "$UP_URL" direct "$c" "$WARMUP" "$DURATION"
  load "proxy c=$c" "$PX_URL" proxy-call "$c" "$WARMUP" "$DURATION"
  load "search557 c=$c" "$PX_URL" proxy-search "$c" "$WARMUP" "$DURATION"
done
# shellcheck disable=SC2046
record rss_557_load $(mem_of "$PX_PID")
stop_pid "$PX_PID"
forget_pid "$PX_PID"

FM_PORT=$(free_port)
log "starting the FastMCP proxy"
"$VENV_PY" "$ROOT/benches/fastmcp_proxy.py" "$UP_URL" --port "$FM_PORT" >"$WORK/fastmcp.log" 2>&1 &
FM_PID=$!
PIDS+=("$FM_PID")
wait_http "http://127.0.0.1:$FM_PORT/mcp" any 90
CPU_PIDS=("upstream:$UP_PID" "fastmcp:$FM_PID")
for c in "${CONCURRENCY[@]}"; do
  load "fastmcp c=$c" "http://127.0.0.1:$FM_PORT/mcp" direct "$c" "$FASTMCP_WARMUP" "$FASTMCP_DURATION"
done
stop_pid "$FM_PID"
forget_pid "$FM_PID"
CPU_PIDS=()
stop_pid "$UP_PID"
forget_pid "$UP_PID"

# The same at c=64 with a tool that takes SLOW_TOOL_MS (I/O wait, no CPU), as real tools do.
UP_PORT=$(free_port)
start_upstream "$CAT_SMALL" "$UP_PORT" "$WORK/upstream-slow.log" --call-delay-ms "$SLOW_TOOL_MS"
UP_PID=$LAST_PID
UP_URL="http://127.0.0.1:$UP_PORT/mcp"
PX_PORT=$(free_port)
start_proxy "$UP_URL" "$PX_PORT" "$WORK/proxy-slow.log"
PX_PID=$LAST_PID
wait_http "http://127.0.0.1:$PX_PORT/readyz" 200 60
CPU_PIDS=("upstream:$UP_PID" "proxy:$PX_PID")
load "slow direct c=64" "$UP_URL" direct 64 "$WARMUP" "$DURATION"
load "slow proxy c=64" "http://127.0.0.1:$PX_PORT/mcp" proxy-call 64 "$WARMUP" "$DURATION"
CPU_PIDS=()
stop_pid "$PX_PID"
forget_pid "$PX_PID"
stop_pid "$UP_PID"
forget_pid "$UP_PID"

# ------------------------------------------------------------------ 11,739 tools
UP_PORT=$(free_port)
start_upstream "$CAT_BIG" "$UP_PORT" "$WORK/upstream-11k.log" --page-size "$BIG_PAGE_SIZE"
UP_PID=$LAST_PID
UP_URL="http://127.0.0.1:$UP_PORT/mcp"
MANIFEST="$WORK/manifest-11k.json"
rm -f "$MANIFEST"

PX_PORT=$(free_port)
T0=$(date +%s%N)
start_proxy "$UP_URL" "$PX_PORT" "$WORK/proxy-11k.log" "$MANIFEST"
PX_PID=$LAST_PID
PX_URL="http://127.0.0.1:$PX_PORT/mcp"
wait_http "http://127.0.0.1:$PX_PORT/readyz" 200 120
record ready_11k_cold_ms "$(( ($(date +%s%N) - T0) / 1000000 ))"
sleep 1
# shellcheck disable=SC2046
record rss_11k_idle $(mem_of "$PX_PID")
CPU_PIDS=("upstream:$UP_PID" "proxy:$PX_PID")

load "search11k c=1" "$PX_URL" proxy-search 1 "$WARMUP" "$DURATION"
load "search11k c=16" "$PX_URL" proxy-search 16 "$WARMUP" "$DURATION"
load "proxy11k c=64" "$PX_URL" proxy-call 64 "$WARMUP" "$DURATION"
# shellcheck disable=SC2046
record rss_11k_load $(mem_of "$PX_PID")
CPU_PIDS=()
for i in 1 2 3; do
  # shellcheck disable=SC2046
  record "refresh_11k_$i" $(mcp_refresh "$PX_URL")
done
# shellcheck disable=SC2046
record rss_11k_refresh $(mem_of "$PX_PID")
stop_pid "$PX_PID"
forget_pid "$PX_PID"
[[ -s "$MANIFEST" ]] || die "the proxy wrote no manifest at $MANIFEST"

# Start to ready from the manifest, with the upstream down (its port is closed).
stop_pid "$UP_PID"
forget_pid "$UP_PID"
PX_PORT=$(free_port)
log "start to ready from an 11,739-tool manifest (upstream down), 5 starts"
UPSTREAMS="bench=$UP_URL" CATALOG_TTL_SEC=0 LOG_LEVEL=warn PORT="$PX_PORT" BIND_ADDR=127.0.0.1 \
  MANIFEST_PATH="$MANIFEST" EMBED_MODEL= "$LOAD" --mode ready --url "http://127.0.0.1:$PX_PORT/readyz" \
  --cmd "$BIN" --cmd-arg serve --repeat 5 --label ready11k --json >>"$RESULTS" || die "ready measurement failed"

record load_after "$(cut -d' ' -f1-3 /proc/loadavg)"
record elapsed_s "$(($(date +%s) - T_START))"

# ------------------------------------------------------------------ the table
python3 - "$RESULTS" "$DURATION" "$WARMUP" "$THREADS" "$FASTMCP_DURATION" "$FASTMCP_WARMUP" "$(getconf CLK_TCK)" "$SLOW_TOOL_MS" <<'PY'
import json, sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
duration, warmup, threads, fm_duration, fm_warmup, clk_tck, slow_ms = sys.argv[2:9]
load = {r["label"]: r for r in rows if "label" in r and r.get("mode") != "ready"}
ready = next((r for r in rows if r.get("mode") == "ready"), None)
kv = {r["key"]: r["value"] for r in rows if "key" in r}

def ms(us): return f"{us / 1000:.3f} ms" if us is not None else "—"
def rps(x): return f"{x:,.0f}/s"
def mib(kb): return f"{int(kb) / 1024:.1f} MiB"
def ratio(a, b): return f"{a / b:.2f}×" if a is not None and b else "—"
def ok(cond): return "**met**" if cond else "**missed**"

def cpu_us(label, proc):
    """CPU time of `proc` per completed call in phase `label`, in µs (clock-tick resolution)."""
    ticks = dict(v.split("=") for v in kv.get(f"cpu {label}", []))
    n = load[label].get("completed_total") or 0
    if proc not in ticks or not n:
        return None
    return int(ticks[proc]) * 1e6 / int(clk_tck) / n

def us(x): return f"{x:,.0f} µs" if x is not None else "—"

out = []
add = out.append
add("| measurement | direct upstream | via mcp-search-proxy | via FastMCP proxy | proxy / direct | proxy / FastMCP | target | result |")
add("|---|--:|--:|--:|--:|--:|---|---|")
for c in (1, 16, 64):
    d, p, f = load[f"direct c={c}"], load[f"proxy c={c}"], load[f"fastmcp c={c}"]
    for metric, key, fmt in (("req/s", "rps", rps), ("p50", "p50_us", ms), ("p99", "p99_us", ms)):
        target = result = ""
        if None in (p[key], d[key], f[key]):
            pass
        elif c == 1 and key == "p50_us":
            added = p["p50_us"] - d["p50_us"]
            target = f"added p50 ≤ 150 µs (measured {added:.0f} µs)"
            result = ok(added <= 150)
        elif c == 64 and key == "rps":
            target = "≥ 70% of direct"
            result = ok(p["rps"] >= 0.7 * d["rps"])
        elif c == 16 and key == "rps":
            target = "≥ 20× FastMCP"
            result = ok(p["rps"] >= 20 * f["rps"])
        elif c == 16 and key == "p99_us":
            target = "≤ 1/10 of FastMCP"
            result = ok(p["p99_us"] * 10 <= f["p99_us"])
        add(f"| `tools/call` c={c} {metric} | {fmt(d[key])} | {fmt(p[key])} | {fmt(f[key])} "
            f"| {ratio(p[key], d[key])} | {ratio(p[key], f[key])} | {target} | {result} |")
for c in (1, 16, 64):
    up_d = cpu_us(f"direct c={c}", "upstream")
    px, up_p = cpu_us(f"proxy c={c}", "proxy"), cpu_us(f"proxy c={c}", "upstream")
    fm, up_f = cpu_us(f"fastmcp c={c}", "fastmcp"), cpu_us(f"fastmcp c={c}", "upstream")
    add(f"| CPU time per `tools/call`, c={c}: the proxy (upstream) | {us(up_d)} (upstream) | {us(px)} ({us(up_p)}) "
        f"| {us(fm)} ({us(up_f)}) | {ratio(px, up_d)} | {ratio(px, fm)} | | |")
d, p = load["slow direct c=64"], load["slow proxy c=64"]
add(f"| `tools/call` c=64, a tool that takes {slow_ms} ms: req/s, p50, p99 | {rps(d['rps'])}, {ms(d['p50_us'])}, {ms(d['p99_us'])} "
    f"| {rps(p['rps'])}, {ms(p['p50_us'])}, {ms(p['p99_us'])} | — | {ratio(p['rps'], d['rps'])} (req/s) | — | | |")
for c in (1, 16, 64):
    s = load[f"search557 c={c}"]
    add(f"| `mcp_search`, 557 tools, c={c} | — | {rps(s['rps'])}, p50 {ms(s['p50_us'])}, p99 {ms(s['p99_us'])}; "
        f"CPU {us(cpu_us(f'search557 c={c}', 'proxy'))}/call | — | — | — | | |")
for c in (1, 16):
    s = load[f"search11k c={c}"]
    t, r = ("", "")
    if c == 1 and s["p50_us"] is not None:
        t, r = "p50 ≤ 2 ms", ok(s["p50_us"] <= 2000)
    add(f"| `mcp_search`, 11,739 tools, c={c} | — | {rps(s['rps'])}, p50 {ms(s['p50_us'])}, p99 {ms(s['p99_us'])}; "
        f"CPU {us(cpu_us(f'search11k c={c}', 'proxy'))}/call | — | — | — | {t} | {r} |")
s = load["proxy11k c=64"]
add(f"| `mcp_call` with the 11,739-tool catalog loaded, c=64 | — | {rps(s['rps'])}, p50 {ms(s['p50_us'])}, p99 {ms(s['p99_us'])} | — | — | — | | |")
h557i, r557i = kv["rss_557_idle"]; h557l, r557l = kv["rss_557_load"]
h11i, r11i = kv["rss_11k_idle"]; h11l, r11l = kv["rss_11k_load"]; h11r, r11r = kv["rss_11k_refresh"]
add(f"| proxy peak RSS (VmHWM), 557 tools: idle / after the load phases | — | {mib(h557i)} / {mib(h557l)} (current RSS {mib(r557l)}) | — | — | — | | |")
add(f"| proxy peak RSS, 11,739 tools: idle (after the startup refresh) / after load / after 3 refreshes | — "
    f"| {mib(h11i)} / {mib(h11l)} / {mib(h11r)} (current RSS {mib(r11r)}) | — | — | — | ≤ 40 MiB | {ok(int(h11r) <= 40 * 1024)} |")
if ready:
    add(f"| proxy peak RSS at ready, started from the 11,739-tool manifest | — | {mib(ready['vm_hwm_kb'])} (current RSS {mib(ready['vm_rss_kb'])}) | — | — | — | ≤ 40 MiB | {ok(int(ready['vm_hwm_kb']) <= 40 * 1024)} |")
    add(f"| start → `/readyz` 200 from the 11,739-tool manifest, upstream down (median of {len(ready['runs_ms'])}) | — "
        f"| {ready['median_ms']:.0f} ms (min {ready['min_ms']:.0f}, max {ready['max_ms']:.0f}) | — | — | — | ≤ 300 ms | {ok(ready['median_ms'] <= 300)} |")
add(f"| start → `/readyz` 200 without a manifest (first refresh of 11,739 tools) | — | {int(kv['ready_11k_cold_ms'])} ms | — | — | — | | |")
refs = [kv[f"refresh_11k_{i}"] for i in (1, 2, 3)]
good = [r for r in refs if r[0] != "failed"]
failed = len(refs) - len(good)
dur = sorted(int(r[0]) for r in good); wall = sorted(float(r[1]) for r in good)
note = f"; **{failed} of 3 failed**: {' '.join(refs[[r[0] for r in refs].index('failed')][2:])}" if failed else ""
cell = f"{dur[len(dur) // 2]} ms / {wall[len(wall) // 2]:.0f} ms" if good else "—"
add(f"| full refresh of 11,739 tools (`mcp_refresh`): `duration_ms` / wall time, median of {len(good)} | — | {cell}{note} | — | — | — | | |")

print()
print(f"mcp-search-proxy performance — {kv['versions']}; {kv['machine']}")
print(f"Load generator: benches/load.rs, CLOSED loop (c workers, each one MCP client on one keep-alive connection that "
      f"sends its next request when the previous reply is complete); {duration} s measured after {warmup} s warm-up "
      f"per cell (FastMCP: {fm_duration} s after {fm_warmup} s), {threads} client thread(s); everything on 127.0.0.1, "
      f"load generator and servers sharing this machine's cores.")
print(f"Load average before / after: {kv['load_before']} / {kv['load_after']}; the measurements took {kv['elapsed_s']} s.")
print("tools/call = `datadog-get_incident {\"incidentId\":\"INC-1\"}` of the 557-tool fake upstream (direct and FastMCP: by "
      "name; mcp-search-proxy: through `mcp_call`); mcp_search query \"send an email\" (default limit).")
print()
print("\n".join(out))
errors = {k: v["errors"] for k, v in load.items() if v["errors"]}
print()
print("errors: " + (json.dumps(errors) if errors else "none"))
PY
