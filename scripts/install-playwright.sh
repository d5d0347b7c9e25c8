#!/usr/bin/env bash
# Installs the Playwright MCP upstream that tests/playwright.rs runs behind the proxy:
#   chromium                           Debian's browser (/usr/bin/chromium) via apt, only when
#                                      missing (apt-get update once first; needs root)
#   tests/peers/playwright/node_modules npm ci of tests/peers/playwright/package-lock.json:
#                                      @playwright/mcp 0.0.83 (+ playwright/playwright-core
#                                      1.64.0-alpha-1790635538000), PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
# Playwright's own browser builds are never downloaded: the test points the server at Debian's
# chromium (--executable-path). Idempotent: chromium is left alone when present; the npm part
# writes a stamp keyed on package.json + lock + node version and is skipped while it matches and
# the pinned version is installed. FORCE=1 reinstalls the npm part.
#
# Called by scripts/install-test-peers.sh (hence by scripts/test.sh and CI); runs on its own too.
# Environment: PLAYWRIGHT=0 skips everything (tests/playwright.rs then skips, or fails under
# REQUIRE_PEERS=1); PLAYWRIGHT_CHROMIUM (default /usr/bin/chromium) names another browser binary,
# which is then never installed.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DIR="$ROOT/tests/peers/playwright"
STAMP="$DIR/node_modules/.peers-stamp"
PKG_VERSION=0.0.83
CHROMIUM="${PLAYWRIGHT_CHROMIUM:-/usr/bin/chromium}"

log() { printf '[install-playwright] %s\n' "$*"; }
die() { printf '[install-playwright] ERROR: %s\n' "$*" >&2; exit 1; }
now() { date +%s; }

if [[ "${PLAYWRIGHT:-1}" == 0 ]]; then
  log "skipped (PLAYWRIGHT=0)"
  exit 0
fi

export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1

# One installer at a time (its own lock: install-test-peers.sh holds tests/peers/.install.lock
# while it runs this script).
if command -v flock >/dev/null 2>&1; then
  exec 8>"$DIR/.install.lock"
  flock 8
fi

# ---------------------------------------------------------------- Debian chromium
install_chromium() {
  if [[ -x "$CHROMIUM" ]]; then
    log "chromium: present ($("$CHROMIUM" --version 2>/dev/null | head -1 || echo "$CHROMIUM"))"
    return
  fi
  [[ "$CHROMIUM" == /usr/bin/chromium ]] || die "PLAYWRIGHT_CHROMIUM=$CHROMIUM is not executable"
  command -v apt-get >/dev/null 2>&1 || die "$CHROMIUM is missing and there is no apt-get to install Debian's chromium"
  [[ "$(id -u)" == 0 ]] || die "$CHROMIUM is missing: installing Debian's chromium needs root (apt-get install chromium)"
  local t0
  t0=$(now)
  export DEBIAN_FRONTEND=noninteractive
  log "chromium: apt-get update"
  apt-get update -qq
  log "chromium: apt-get install chromium"
  apt-get install -y -qq chromium >/dev/null
  [[ -x "$CHROMIUM" ]] || die "apt-get install chromium did not provide $CHROMIUM"
  log "chromium: installed in $(($(now) - t0)) s ($("$CHROMIUM" --version 2>/dev/null | head -1))"
}

# ---------------------------------------------------------------- npm: @playwright/mcp
installed_version() {
  node -p 'require(process.argv[1]).version' "$DIR/node_modules/@playwright/mcp/package.json" 2>/dev/null || true
}

install_mcp() {
  command -v node >/dev/null 2>&1 || die "node not found (need Node.js >= 20 and npm)"
  command -v npm >/dev/null 2>&1 || die "npm not found (need Node.js >= 20 and npm)"
  node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' \
    || die "node $(node --version) is too old: playwright 1.64 needs Node.js >= 20"
  [[ -f "$DIR/package-lock.json" ]] || die "$DIR/package-lock.json is missing"
  local key
  key="$(cat "$DIR/package.json" "$DIR/package-lock.json" <(node --version) | sha256sum | cut -d' ' -f1)"

  if [[ -z "${FORCE:-}" && -f "$STAMP" && "$(cat "$STAMP")" == "$key" ]] \
    && [[ "$(installed_version)" == "$PKG_VERSION" ]]; then
    log "@playwright/mcp: up to date ($PKG_VERSION in $DIR/node_modules)"
    return
  fi

  local t0
  t0=$(now)
  log "@playwright/mcp: npm ci in tests/peers/playwright (node $(node --version), npm $(npm --version))"
  (cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || die "npm ci failed"
  [[ "$(installed_version)" == "$PKG_VERSION" ]] \
    || die "npm ci gave @playwright/mcp '$(installed_version)', not $PKG_VERSION"
  printf '%s\n' "$key" >"$STAMP"
  log "@playwright/mcp: installed $PKG_VERSION in $(($(now) - t0)) s"
}

install_chromium
install_mcp
