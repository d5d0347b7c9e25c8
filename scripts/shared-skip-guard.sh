#!/usr/bin/env bash
# Runs every test binary that reads ../shared (a file under tests/ or crates/*/tests/ that calls
# shared_or_skip or bench_or_skip, tests/support/shared_dir.rs) as a user's clone runs them: the
# shared folder pointed at an empty directory (SHARED_DIR), REQUIRE_SHARED unset, REQUIRE_PEERS=1
# as scripts/test.sh sets it. They must pass by skipping, and each binary must say at least one
# skip. Run by .ci/run after scripts/test.sh (the build is shared, so this takes seconds).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

empty="$(mktemp -d "${TMPDIR:-/tmp}/no-shared.XXXXXX")"
log="$(mktemp "${TMPDIR:-/tmp}/shared-skips.XXXXXX")"
trap 'rm -rf "$empty" "$log"' EXIT

# package name -> its test targets that read ../shared
declare -A targets
files=0
while IFS= read -r file; do
  dir="$(dirname "$(dirname "$file")")"
  package="$(sed -n 's/^name *= *"\(.*\)"/\1/p' "$dir/Cargo.toml" | head -1)"
  targets[$package]+=" --test $(basename "$file" .rs)"
  files=$((files + 1))
done < <(grep -lE '\b(shared|bench)_or_skip\(' tests/*.rs crates/*/tests/*.rs | sort)

if ((files == 0)); then
  echo "shared-skip-guard: no test reads ../shared through shared_or_skip/bench_or_skip;" >&2
  echo "                   the guard would check nothing" >&2
  exit 1
fi

for package in "${!targets[@]}"; do
  echo "cargo test -p $package${targets[$package]}  (SHARED_DIR=$empty)"
  # shellcheck disable=SC2086 # the targets are words
  env -u REQUIRE_SHARED SHARED_DIR="$empty" SHARED_SKIP_LOG="$log" REQUIRE_PEERS=1 \
    cargo test --no-fail-fast -q -p "$package" ${targets[$package]}
done

skips=$(grep -c . "$log" || true)
echo "skipped for want of ../shared: $skips test(s) in $files binary(ies)"
sed 's/^/  /' "$log"
if ((skips < files)); then
  echo "shared-skip-guard: expected at least one skip per binary ($files), saw $skips" >&2
  exit 1
fi
