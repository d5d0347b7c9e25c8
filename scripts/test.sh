#!/usr/bin/env bash
# The test command: installs the real SDK test peers and the embedding model (each skipped when
# already installed), checks
# formatting (cargo fmt --check) and lints (cargo clippy --all-targets -D warnings), then runs
# every test of the workspace (unit, integration incl. tests/real_peers.rs, doc tests) with
# REQUIRE_PEERS=1, so a missing peer fails the run instead of skipping the SDK tests.
#
# Usage: scripts/test.sh [extra cargo test arguments, e.g. -- --nocapture]
# Environment: CARGO_TARGET_DIR, PYTHON (see install-test-peers.sh) are honoured.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

START=$(date +%s)
section() { printf '\n==== %s ====\n' "$*"; }
elapsed() { echo "$(($(date +%s) - START)) s"; }
on_exit() {
  local rc=$?
  if [[ $rc -eq 0 ]]; then
    section "PASSED (total $(elapsed))"
  else
    section "FAILED with exit code $rc (total $(elapsed))"
  fi
}
trap on_exit EXIT

section "Test peers (scripts/install-test-peers.sh)"
"$ROOT/scripts/install-test-peers.sh"

section "Conformance suite (scripts/install-conformance.sh)"
"$ROOT/scripts/install-conformance.sh"

section "Embedding model (scripts/fetch-model.sh)"
"$ROOT/scripts/fetch-model.sh"

section "Kubernetes manifests (scripts/validate-k8s.sh)"
"$ROOT/scripts/validate-k8s.sh"

section "Prometheus rules and scrape config (scripts/validate-prometheus.sh)"
"$ROOT/scripts/validate-prometheus.sh"

section "cargo fmt --check"
cargo fmt --all --check

section "scripts/embed-external.py compiles"
# it runs PyTorch (sentence-transformers), too heavy to install here; its file format is the one
# `search-eval --vectors` reads, which search-eval's tests check
"${PYTHON:-python3}" -m py_compile "$ROOT/scripts/embed-external.py"

section "cargo clippy --all-targets -- -D warnings"
cargo clippy --workspace --all-targets -- -D warnings

if [[ -d "$ROOT/../shared/bench/eval" ]]; then
  # crates/search-eval/tests/search_floors.rs reads the visible sets' tool and query vectors
  # from this cache: a release build embeds them (minutes; a debug build would take hours), once
  # per content.
  section "Vector cache for the semantic floors (release search-eval --all-visible --embed-model)"
  cargo build --release -p search-eval
  "${CARGO_TARGET_DIR:-$ROOT/target}/release/search-eval" --all-visible \
    --embed-model "$ROOT/models/all-MiniLM-L6-v2" \
    --vector-cache "${CARGO_TARGET_DIR:-$ROOT/target}/vector-cache" \
    --eval-dir "$ROOT/../shared/bench/eval" --catalogs-dir "$ROOT/../shared/bench/catalogs"
fi

section "cargo test --workspace${*:+ $*}"
export REQUIRE_PEERS=1
cargo --version
cargo test --workspace "$@"
