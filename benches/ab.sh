#!/usr/bin/env bash
# A/B of the relay: two proxy binaries in front of one fake upstream, measured in one run with
# the cells alternated, so that both see the same machine.
#
#   benches/ab.sh OLD_BINARY NEW_BINARY      # e.g. a release build of the previous commit
#
# Starts `NEW_BINARY demo-upstream` (the 557-tool deployment catalog) and both proxies on
# 127.0.0.1, then for each round and concurrency runs the load generator (benches/load.rs)
# against the upstream directly and against each proxy (`mcp_call` of datadog-get_incident),
# swapping which proxy goes first every round. Prints one JSON line per cell, then the ratio
# NEW / OLD of each round's throughput and the medians.
#
# Environment: ROUNDS (default 6), DURATION seconds per cell (default 4), CONCURRENCY (default
# "1 16 64"), CATALOGS (default ../shared/bench/catalogs), LOAD (the load generator; default:
# built with `cargo build --release --bench load`).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
OLD="${1:?usage: benches/ab.sh OLD_BINARY NEW_BINARY}"
NEW="${2:?usage: benches/ab.sh OLD_BINARY NEW_BINARY}"
ROUNDS="${ROUNDS:-6}"
DURATION="${DURATION:-4}"
CONCURRENCY="${CONCURRENCY:-1 16 64}"
CATALOG="${CATALOGS:-$ROOT/../shared/bench/catalogs}/deployment.json"
[[ -f "$CATALOG" ]] || { echo "ab.sh: missing $CATALOG (set CATALOGS)" >&2; exit 1; }
# shellcheck source=benches/lib.sh
source "$ROOT/benches/lib.sh"
load_generator

WORK="$(mktemp -d "${TMPDIR:-/tmp}/mcp-ab.XXXXXX")"
PIDS=()
cleanup() { kill "${PIDS[@]}" 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT
wait_ready() { for _ in $(seq 100); do curl -sf "$1" >/dev/null && return 0; sleep 0.2; done; echo "ab.sh: $1 not ready" >&2; exit 1; }

UP=$(free_port)
"$NEW" demo-upstream --bind "127.0.0.1:$UP" --catalog "$CATALOG" >"$WORK/upstream.log" 2>&1 &
PIDS+=("$!")
start_proxy() { # binary port
  UPSTREAMS="bench=http://127.0.0.1:$UP/mcp" CATALOG_TTL_SEC=0 REFRESH_MIN_INTERVAL_SEC=0 LOG_LEVEL=warn \
    PORT="$2" BIND_ADDR=127.0.0.1 EMBED_MODEL= "$1" serve >"$WORK/proxy-$2.log" 2>&1 &
  PIDS+=("$!")
}
PA=$(free_port); start_proxy "$OLD" "$PA"
PB=$(free_port); start_proxy "$NEW" "$PB"
wait_ready "http://127.0.0.1:$PA/readyz"
wait_ready "http://127.0.0.1:$PB/readyz"

cell() { # label port mode concurrency
  "$LOAD" --url "http://127.0.0.1:$2/mcp" --mode "$3" --concurrency "$4" --duration "$DURATION" --warmup 1 \
    --tool datadog-get_incident --args '{"incidentId":"INC-1"}' --label "$1" --json | tee -a "$WORK/cells.jsonl"
}
for r in $(seq "$ROUNDS"); do
  for c in $CONCURRENCY; do
    cell "direct c=$c r$r" "$UP" direct "$c"
    if ((r % 2)); then order="old:$PA new:$PB"; else order="new:$PB old:$PA"; fi
    for side in $order; do cell "${side%%:*} c=$c r$r" "${side#*:}" proxy-call "$c"; done
  done
done

python3 - "$WORK/cells.jsonl" <<'PY'
import collections, json, statistics, sys
cells = collections.defaultdict(dict)
for line in open(sys.argv[1]):
    r = json.loads(line)
    side, c, rnd = r["label"].split()
    cells[c].setdefault(side, {})[rnd] = r
for c, sides in cells.items():
    ratios = [sides["new"][k]["rps"] / sides["old"][k]["rps"] for k in sides["old"] if sides["old"][k]["rps"]]
    p50 = {s: statistics.median(v["p50_us"] for v in sides[s].values()) for s in ("direct", "old", "new")}
    print(f"{c}: new/old throughput {statistics.median(ratios):.2f} (rounds {', '.join(f'{x:.2f}' for x in ratios)}); "
          f"p50 direct {p50['direct']:.0f} µs, old {p50['old']:.0f} µs, new {p50['new']:.0f} µs")
PY
