#!/usr/bin/env bash
# The test command: installs the real SDK test peers and the embedding model (each skipped when
# already installed), checks
# formatting (cargo fmt --check) and lints (cargo clippy --all-targets -D warnings), then runs
# every test of the workspace (unit, integration incl. tests/real_peers.rs, doc tests) with
# REQUIRE_PEERS=1, so a missing peer fails the run instead of skipping the SDK tests, and with
# --no-fail-fast, so one failing test binary does not hide the others.
#
# The tests that read ../shared (benchmark catalogs and evaluation sets; a user's clone has none)
# skip without it, each with one line naming what it skipped; the script counts them at the end.
# Only REQUIRE_SHARED=1 (set by .ci/run, where ../shared is always there) makes them fail.
#
# Usage: scripts/test.sh [extra cargo test arguments, e.g. -- --nocapture]
# Environment: CARGO_TARGET_DIR, PYTHON (see install-test-peers.sh), SHARED_DIR (the shared
# folder; default ../shared beside the repository) and REQUIRE_SHARED are honoured.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

START=$(date +%s)
section() { printf '\n==== %s ====\n' "$*"; }
elapsed() { echo "$(($(date +%s) - START)) s"; }

SHARED="${SHARED_DIR:-$ROOT/../shared}"
# every test that skips for want of ../shared appends one line here (tests/support/shared_dir.rs)
SHARED_SKIP_LOG="$(mktemp "${TMPDIR:-/tmp}/shared-skips.XXXXXX")"
export SHARED_SKIP_LOG
skipped_for_shared() {
  local count
  count=$(grep -c . "$SHARED_SKIP_LOG" 2>/dev/null || true)
  section "Tests skipped for want of ../shared: ${count:-0}"
  if [[ ${count:-0} -gt 0 ]]; then
    sed 's/^/  /' "$SHARED_SKIP_LOG"
    echo "  (clone beside shared/, or point SHARED_DIR at it, to run them)"
  fi
  rm -f "$SHARED_SKIP_LOG"
}
on_exit() {
  local rc=$?
  skipped_for_shared
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

if [[ -d "$SHARED/bench/eval" ]]; then
  # crates/search-eval/tests/search_floors.rs reads the visible sets' tool and query vectors
  # from this cache: a release build embeds them (minutes; a debug build would take hours), once
  # per content.
  section "Vector cache for the semantic floors (release search-eval --all-visible --embed-model)"
  cargo build --release -p search-eval
  "${CARGO_TARGET_DIR:-$ROOT/target}/release/search-eval" --all-visible \
    --embed-model "$ROOT/models/all-MiniLM-L6-v2" \
    --vector-cache "${CARGO_TARGET_DIR:-$ROOT/target}/vector-cache" \
    --eval-dir "$SHARED/bench/eval" --catalogs-dir "$SHARED/bench/catalogs"
else
  section "Vector cache for the semantic floors: skipped, no $SHARED/bench/eval"
fi

section "cargo test --workspace${*:+ $*}"
export REQUIRE_PEERS=1
cargo --version
cargo test --workspace --no-fail-fast "$@"
