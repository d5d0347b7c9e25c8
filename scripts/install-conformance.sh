#!/usr/bin/env bash
# Installs the official MCP conformance suite (0.1.16 and 0.2.0-alpha.12) and the Node 22
# runtime it needs into tests/conformance/node_modules, from the committed lockfile.
# Idempotent: skipped while the lockfile is unchanged and the install still runs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/tests/conformance"
STAMP="$DIR/node_modules/.installed-lock-sha"
want="$(sha256sum "$DIR/package-lock.json" | cut -d' ' -f1)"
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" && "${FORCE:-0}" != 1 ]] \
  && "$DIR/node_modules/.bin/node" --version 2>/dev/null | grep -q '^v22'; then
  echo "conformance suite: already installed"
  exit 0
fi
command -v npm >/dev/null 2>&1 || { echo "ERROR: npm is needed to install the conformance suite" >&2; exit 1; }
echo "conformance suite: npm ci in tests/conformance"
(cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error)
"$DIR/node_modules/.bin/node" --version | grep -q '^v22' || { echo "ERROR: node@22 did not install" >&2; exit 1; }
echo "$want" > "$STAMP"
