#!/usr/bin/env bash
# Reproduces the query delta the service ships (crates/embed/query-delta.safetensors), the
# fusion refitted on its cosines (crates/tool-search/src/fusion-model.json), and the held-out
# figures docs/search.md reports. CI does not train; it checks that the shipped delta gives
# the figures recorded in its provenance (crates/search-eval/tests/query_delta.rs).
#
# Every figure for a visible set comes from an encoder trained without that set's requests:
# - four folds, each holding one licensed source out (deployment-dev with seed-examples, which
#   share a catalog; metatool-dev; demo-dev; this project's own everyday sets), trained on the
#   other licensed sets, the own sets, BFCL and the self-supervised pairs;
# - the delta that ships, trained on all of them: ToolLens, MCP-Flow and MCPToolBench++ never
#   train anything (no licence for it), so its figures there are held out.
# The fusion is then refitted on the licensed sets with each set's queries embedded by the
# fold that did not see it (--query-delta-for), so it learns the cosines an unseen request
# gets; its leave-one-set-out table is the held-out hybrid figure of each licensed set.
#
# Usage: scripts/train-query-delta.sh [OUT]   (OUT: the folds and logs, default target/query-delta)
# Environment: TRAIN_FLAGS (extra train-encoder flags), SKIP_FOLDS (reuse OUT's folds: 1 for all,
# or a comma-separated list of names such as fold-deployment,fold-metatool).
# Takes about an hour on 2 cores.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
OUT="${1:-target/query-delta}"
SHARED="${SHARED_DIR:-../shared}" # relative: the provenance records the command as run
MODEL=models/all-MiniLM-L6-v2
mkdir -p "$OUT"

scripts/fetch-model.sh
scripts/fetch-training-data.sh
cargo build --release -p search-eval
SE="${CARGO_TARGET_DIR:-target}/release/search-eval"
dirs=(--eval-dir "$SHARED/bench/eval" --catalogs-dir "$SHARED/bench/catalogs")
own=(--own-set crates/search-eval/data/everyday-office.json --own-set crates/search-eval/data/everyday-engineering.json
  --own-set crates/search-eval/data/everyday-business.json)
# shellcheck disable=SC2206 # TRAIN_FLAGS is words
flags=(--embed-model "$MODEL" "${dirs[@]}" --ssl-catalog "$SHARED/bench/catalogs/real-11k.json"
  --bfcl target/training-data/bfcl_eval/data --self-supervised 2000 --epochs 2 --seed 1 ${TRAIN_FLAGS:-})

train() { # NAME TRAIN_SETS HOLD_OUT OUT_FILE [OWN-SET FLAGS]
  if [[ "${SKIP_FOLDS:-}" == 1 && "$1" == fold-* || ",${SKIP_FOLDS:-}," == *",$1,"* ]]; then
    echo "== $1: reusing $4"
    return
  fi
  echo "== train-encoder $1: on $2 ${*:5}, holding out $3"
  "$SE" train-encoder "${flags[@]}" --train-sets "$2" --hold-out "$3" --out "$4" "${@:5}" | tee "$OUT/$1.log"
}
train fold-deployment demo-dev,metatool-dev deployment-dev,seed-examples "$OUT/fold-deployment.safetensors" "${own[@]}"
train fold-metatool deployment-dev,demo-dev,seed-examples metatool-dev "$OUT/fold-metatool.safetensors" "${own[@]}"
train fold-demo deployment-dev,metatool-dev,seed-examples demo-dev "$OUT/fold-demo.safetensors" "${own[@]}"
train fold-own deployment-dev,demo-dev,metatool-dev,seed-examples mcp_flow-dev "$OUT/fold-own.safetensors"
train ship deployment-dev,demo-dev,metatool-dev,seed-examples mcp_flow-dev,mcptoolbench,toollens \
  crates/embed/query-delta.safetensors "${own[@]}" --record-visible

folds=(--query-delta crates/embed/query-delta.safetensors
  --query-delta-for "deployment-dev=$OUT/fold-deployment.safetensors"
  --query-delta-for "seed-examples=$OUT/fold-deployment.safetensors"
  --query-delta-for "metatool-dev=$OUT/fold-metatool.safetensors"
  --query-delta-for "demo-dev=$OUT/fold-demo.safetensors"
  --query-delta-for "everyday-office=$OUT/fold-own.safetensors"
  --query-delta-for "everyday-engineering=$OUT/fold-own.safetensors"
  --query-delta-for "everyday-business=$OUT/fold-own.safetensors")
echo "== the fusion, refitted on held-out cosines"
# shellcheck disable=SC2086 # FUSION_FLAGS is words
"$SE" train --embed-model "$MODEL" "${dirs[@]}" "${folds[@]}" "${own[@]}" \
  --l2 0.03 --max-zero 0.02 --drop verbose,foreign,unknown,best_cosine,agree,operation,cosine ${FUSION_FLAGS:-} \
  --out crates/tool-search/src/fusion-model.json | tee "$OUT/fusion.log"
cargo build --release -p search-eval
echo "== every visible set, each licensed one with the fold that did not see it"
"$SE" --all-visible --embed-model "$MODEL" "${dirs[@]}" "${folds[@]}" | tee "$OUT/held-out.txt"
