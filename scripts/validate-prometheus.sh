#!/usr/bin/env bash
# Validates deploy/prometheus with promtool: the alert rules (syntax, then their unit tests in
# alerts.test.yml) and the scrape configuration. No Prometheus server is started.
#
#   scripts/validate-prometheus.sh
#
# promtool comes from Debian's `prometheus` package (installed with apt-get when missing and
# running as root; Debian 13 ships Prometheus 2.42's promtool). Set PROMTOOL to use another one.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/deploy/prometheus"
fail() { echo "validate-prometheus: FAIL: $*" >&2; exit 1; }

promtool="${PROMTOOL:-$(command -v promtool || true)}"
if [[ -z "$promtool" ]]; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        echo "validate-prometheus: installing promtool (Debian package prometheus)"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1 \
            || { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends prometheus >/dev/null 2>&1; } \
            || fail "apt-get install prometheus failed"
        promtool=$(command -v promtool) || fail "promtool missing after installing prometheus"
    else
        fail "promtool not found (apt-get install prometheus, or set PROMTOOL)"
    fi
fi

"$promtool" check rules "$dir/alerts.yml" || fail "alerts.yml"
(cd "$dir" && "$promtool" test rules alerts.test.yml) || fail "alerts.test.yml"
# The scrape config names a token file that exists only where Prometheus runs: check a copy
# that points at an empty one (and at the rules by absolute path).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: > "$tmp/token"
sed -e "s#/etc/prometheus/mcp-search-proxy.token#$tmp/token#" -e "s#^  - alerts.yml#  - $dir/alerts.yml#" \
    "$dir/scrape.yml" > "$tmp/scrape.yml"
"$promtool" check config "$tmp/scrape.yml" >/dev/null || fail "scrape.yml"
echo "validate-prometheus: ok  deploy/prometheus (alerts.yml: rules and unit tests; scrape.yml)"
