#!/usr/bin/env bash
# Installs the real MCP SDK peers that tests/real_peers.rs drives, from their registries, into
# the repository (both places are gitignored):
#   .venv/                   Python venv: mcp 2.3.0 (official Python SDK 2.x) and fastmcp 4.2.3,
#                            every transitive dependency pinned by the constraints below
#   tests/peers/node_modules npm ci of tests/peers/package-lock.json: @modelcontextprotocol/sdk
#                            1.32.2 (TS SDK 1.x), @modelcontextprotocol/{client,server} 2.4.0 and
#                            @modelcontextprotocol/node 2.1.2 (TS SDK 2.x), express, zod
# Idempotent: each half writes a stamp keyed on its pins and is skipped while the stamp matches
# and the install still imports. FORCE=1 reinstalls both.
#
# Needs: python3 >= 3.10 with pip (venv module, or virtualenv as a fallback), node >= 20, npm.
# Environment: PYTHON (default python3), FORCE=1.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-python3}"
VENV="$ROOT/.venv"
PEERS="$ROOT/tests/peers"
PY_STAMP="$VENV/.peers-stamp"
NODE_STAMP="$PEERS/node_modules/.peers-stamp"

# The direct pins, and the full resolution they had when the reference notes were verified
# (pip's own resolution of these two pins, with uvicorn at the verified 0.54). Constraints only
# restrict versions; they do not add packages.
PY_REQUIREMENTS=(mcp==2.3.0 fastmcp==4.2.3)
PY_CONSTRAINTS='aiofile==3.12.3
annotated-types==0.8.0
anyio==4.16.0
attrs==26.1.0
Authlib==1.9.10
beartype==0.23.1
cachetools==8.0.2
caio==0.12.10
certifi==2026.10.19.post1
cffi==2.1.1
click==8.5.1
cryptography==50.0.2
cyclopts==5.5.2
dnspython==2.9.2
docstring_parser==0.18.0
email-validator==2.4.0
exceptiongroup==1.3.2
fastmcp==4.2.3
fastmcp-slim==4.2.3
griffelib==2.4.1
h11==0.16.0
httpcore2==2.16.2
httpx2==2.16.2
idna==3.20
joserfc==1.8.0
jsonref==1.1.0
jsonschema==4.26.0
jsonschema-path==0.5.0
jsonschema-specifications==2025.9.1
markdown-it-py==4.3.0
mcp==2.3.0
mcp-types==2.3.0
mdurl==0.1.2
openapi-pydantic==0.6.0
opentelemetry-api==1.45.2
packaging==26.4
pathable==0.6.0
platformdirs==4.14.9
py-key-value-aio==0.5.0
pycparser==3.12
pydantic==2.14.4
pydantic-settings==2.16.3
pydantic_core==2.50.5
Pygments==2.21.0
PyJWT==2.15.1
pyperclip==1.11.0
python-dotenv==1.2.4
python-multipart==0.0.34
PyYAML==6.0.4
referencing==0.37.0
rich==15.0.0
rich-rst==2.2.0
rpds-py==2026.9.1
sse-starlette==3.7.1
starlette==1.10.0
truststore==0.10.5
typing-inspection==0.4.5
typing_extensions==4.16.0
uncalled-for==0.6.2
uvicorn==0.54.0
watchfiles==1.3.0
websockets==17.4'

log() { printf '[install-test-peers] %s\n' "$*"; }
die() { printf '[install-test-peers] ERROR: %s\n' "$*" >&2; exit 1; }
sha() { sha256sum | cut -d' ' -f1; }
now() { date +%s; }

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 PIP_PROGRESS_BAR=off
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false

# One installer at a time (two test runs started together must not build the same venv).
mkdir -p "$PEERS"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$PEERS/.install.lock"
  flock 9
fi

# ---------------------------------------------------------------- Python: mcp 2.x + fastmcp
install_python() {
  command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (need Python >= 3.10 with pip)"
  "$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else 1)' \
    || die "$("$PYTHON" --version 2>&1) is too old: mcp 2.x needs Python >= 3.10"
  local key
  key="$(printf '%s\n%s\n%s\n' "$("$PYTHON" -c 'import sys; print(sys.version)')" \
    "${PY_REQUIREMENTS[*]}" "$PY_CONSTRAINTS" | sha)"

  if [[ -z "${FORCE:-}" && -f "$PY_STAMP" && "$(cat "$PY_STAMP")" == "$key" ]] \
    && "$VENV/bin/python" -c 'import mcp, fastmcp' >/dev/null 2>&1; then
    log "python: up to date ($VENV: ${PY_REQUIREMENTS[*]})"
    return
  fi

  local t0
  t0=$(now)
  rm -rf "$VENV"
  log "python: creating $VENV with $("$PYTHON" --version 2>&1)"
  if ! "$PYTHON" -m venv "$VENV" >/dev/null 2>&1; then
    # Debian's system python3 ships venv without ensurepip (package python3-venv); PyPI's
    # virtualenv needs neither.
    rm -rf "$VENV"
    log "python: 'python3 -m venv' failed; using virtualenv from PyPI"
    "$PYTHON" -m pip install -q --user virtualenv 2>/dev/null \
      || "$PYTHON" -m pip install -q --break-system-packages --user virtualenv \
      || die "could not install virtualenv (or install Debian's python3-venv)"
    "$PYTHON" -m virtualenv -q "$VENV" || die "virtualenv $VENV failed"
  fi

  log "python: pip install ${PY_REQUIREMENTS[*]} (+ pinned dependencies)"
  local constraints
  constraints="$(mktemp)"
  printf '%s\n' "$PY_CONSTRAINTS" >"$constraints"
  if ! "$VENV/bin/python" -m pip install -q -c "$constraints" "${PY_REQUIREMENTS[@]}"; then
    rm -f "$constraints"
    die "pip install failed"
  fi
  rm -f "$constraints"
  "$VENV/bin/python" -c 'import mcp, fastmcp; from mcp import Client' \
    || die "the venv does not import mcp/fastmcp after installing"
  printf '%s\n' "$key" >"$PY_STAMP"
  log "python: installed in $(($(now) - t0)) s"
}

# ---------------------------------------------------------------- Node: TS SDK 1.x and 2.x
install_node() {
  command -v node >/dev/null 2>&1 || die "node not found (need Node.js >= 20 and npm)"
  command -v npm >/dev/null 2>&1 || die "npm not found (need Node.js >= 20 and npm)"
  node -e 'process.exit(Number(process.versions.node.split(".")[0]) >= 20 ? 0 : 1)' \
    || die "node $(node --version) is too old: the TS SDK 2.x needs Node.js >= 20"
  [[ -f "$PEERS/package-lock.json" ]] || die "$PEERS/package-lock.json is missing"
  local key
  key="$(cat "$PEERS/package.json" "$PEERS/package-lock.json" <(node --version) | sha)"

  if [[ -z "${FORCE:-}" && -f "$NODE_STAMP" && "$(cat "$NODE_STAMP")" == "$key" ]] \
    && [[ -f "$PEERS/node_modules/@modelcontextprotocol/sdk/package.json" ]]; then
    log "node: up to date ($PEERS/node_modules)"
    return
  fi

  local t0
  t0=$(now)
  log "node: npm ci in tests/peers (node $(node --version), npm $(npm --version))"
  (cd "$PEERS" && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || die "npm ci failed"
  printf '%s\n' "$key" >"$NODE_STAMP"
  log "node: installed in $(($(now) - t0)) s"
}

install_python
install_node
