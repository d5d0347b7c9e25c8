#!/usr/bin/env bash
# Installs the real MCP SDK peers that tests/real_peers.rs drives, from their registries, into
# the repository (both places are gitignored):
#   .venv/                   Python venv: mcp 2.3.0 (official Python SDK 2.x) and fastmcp 4.2.3,
#                            every transitive dependency pinned by the constraints below
#   tests/peers/node_modules npm ci of tests/peers/package-lock.json: @modelcontextprotocol/sdk
#                            1.32.2 (TS SDK 1.x), @modelcontextprotocol/{client,server} 2.4.0 and
#                            @modelcontextprotocol/node 2.1.2 (TS SDK 2.x), express, zod
#   .venv-litellm/           Python venv: litellm[proxy]==1.108.7 (a real LiteLLM MCP gateway for
#                            tests/litellm.rs and scripts/litellm-stack.sh), dependencies pinned
#   Playwright MCP           scripts/install-playwright.sh: Debian chromium (apt, only when missing)
#                            and tests/peers/playwright/node_modules (@playwright/mcp 0.0.83, no
#                            browser download) for tests/playwright.rs
# Idempotent: each part writes a stamp keyed on its pins and is skipped while the stamp matches
# and the install still imports. FORCE=1 reinstalls all of them.
#
# Needs: python3 >= 3.10 with pip (venv module, or virtualenv as a fallback), node >= 20, npm.
# Environment: PYTHON (default python3), FORCE=1, LITELLM=0 (skip LiteLLM: ~60-90 s and ~750 MB;
# tests/litellm.rs then skips, or fails under REQUIRE_PEERS=1), PLAYWRIGHT=0 (skip Playwright MCP:
# apt's chromium is ~35-100 s and ~350 MB; tests/playwright.rs then skips, or fails under
# REQUIRE_PEERS=1).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

PYTHON="${PYTHON:-python3}"
VENV="$ROOT/.venv"
PEERS="$ROOT/tests/peers"
PY_STAMP="$VENV/.peers-stamp"
NODE_STAMP="$PEERS/node_modules/.peers-stamp"
LITELLM_VENV="$ROOT/.venv-litellm"
LITELLM_STAMP="$LITELLM_VENV/.peers-stamp"

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

# LiteLLM: the newest release whose [proxy] extra installs from PyPI alone (from 1.109.0 on it
# needs a litellm-proxy package that is not published there, and pip backtracks through a dozen
# 40 MB wheels). Constraints: pip's resolution of that pin (Python 3.11, 2026-12-02).
LITELLM_REQUIREMENTS=('litellm[proxy]==1.108.7')
LITELLM_CONSTRAINTS='aiohappyeyeballs==2.7.1
aiohttp==3.14.5
aiosignal==1.4.0
annotated-doc==0.0.7
annotated-types==0.8.0
anyio==4.16.0
APScheduler==3.11.3
attrs==26.1.0
azure-core==1.41.0
azure-identity==1.27.0
azure-storage-blob==12.31.1
backoff==2.2.1
boto3==1.44.8
botocore==1.44.8
certifi==2026.10.19.post1
cffi==2.1.1
charset-normalizer==3.5.3
click==8.5.1
croniter==7.0.0
cryptography==50.0.2
dnspython==2.9.2
email-validator==2.4.0
Expression==5.8.0
fastapi==0.165.0
fastapi-sso==0.23.0
fastuuid==0.14.0
filelock==4.3.1
frozenlist==1.8.0
fsspec==2026.9.0
granian==2.8.9
gunicorn==23.0.0
h11==0.16.0
h2==4.4.1
hf-xet==1.8.0
hiredis==3.5.0
hpack==4.2.0
httpcore==1.0.9
httpcore2==2.16.2
httpx==0.29.0
httpx2==2.16.2
huggingface_hub==1.33.0
hyperframe==6.1.0
idna==3.20
importlib_metadata==8.9.0
inquirerpy==0.3.4
isodate==0.7.2
Jinja2==3.1.6
jiter==0.19.0
jmespath==1.1.0
jsonschema==4.26.0
jsonschema-specifications==2025.9.1
litellm==1.108.7
litellm-enterprise==0.1.79.post1
litellm-proxy-extras==0.4.110
markdown-it-py==4.3.0
MarkupSafe==3.0.4
mcp==2.3.0
mcp-types==2.3.0
mdurl==0.1.2
msal==1.39.0
msal-extensions==1.3.1
multidict==7.2.1
numpy==2.4.6
oauthlib==4.0.1
openai==3.57.0
opentelemetry-api==1.45.2
orjson==3.13.0
packaging==26.4
pfzy==0.3.4
polars==1.44.2
polars-runtime-32==1.44.2
prompt_toolkit==3.0.53
propcache==0.5.4
psycopg==3.3.9
psycopg-binary==3.3.9
pycparser==3.12
pydantic==2.14.4
pydantic-settings==2.16.3
pydantic_core==2.50.5
Pygments==2.21.0
PyJWT==2.15.1
PyNaCl==1.6.2
pyroscope-io==0.8.16
python-dateutil==2.9.0.post0
python-dotenv==1.2.4
python-multipart==0.0.34
PyYAML==6.0.4
redis==8.1.0
referencing==0.37.0
regex==2026.11.19
requests==2.34.2
RestrictedPython==8.5
rich==13.9.4
rpds-py==2026.9.1
rq==2.12.0
s3transfer==0.19.3
six==1.17.0
sniffio==1.3.1
soundfile==0.14.0
sse-starlette==3.7.1
starlette==1.10.0
tiktoken==0.14.0
tokenizers==0.23.3
tomlkit==0.15.2
tqdm==4.70.1
truststore==0.10.5
typing-inspection==0.4.5
typing_extensions==4.16.0
tzlocal==5.4.5
urllib3==2.8.0
uvicorn==0.55.0
uvloop==0.23.0
wcwidth==0.9.4
websockets==15.0.1
yarl==1.25.1
zipp==4.1.2'

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

# make_venv WHAT DIR: a fresh venv in DIR with $PYTHON.
make_venv() {
  local what=$1 dir=$2
  rm -rf "$dir"
  log "$what: creating $dir with $("$PYTHON" --version 2>&1)"
  if ! "$PYTHON" -m venv "$dir" >/dev/null 2>&1; then
    # Debian's system python3 ships venv without ensurepip (package python3-venv); PyPI's
    # virtualenv needs neither.
    rm -rf "$dir"
    log "$what: 'python3 -m venv' failed; using virtualenv from PyPI"
    "$PYTHON" -m pip install -q --user virtualenv 2>/dev/null \
      || "$PYTHON" -m pip install -q --break-system-packages --user virtualenv \
      || die "could not install virtualenv (or install Debian's python3-venv)"
    "$PYTHON" -m virtualenv -q "$dir" || die "virtualenv $dir failed"
  fi
}

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
  make_venv python "$VENV"

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

# ---------------------------------------------------------------- LiteLLM (own venv)
install_litellm() {
  if [[ "${LITELLM:-1}" == 0 ]]; then
    log "litellm: skipped (LITELLM=0)"
    return
  fi
  command -v "$PYTHON" >/dev/null 2>&1 || die "$PYTHON not found (need Python >= 3.10 with pip)"
  "$PYTHON" -c 'import sys; sys.exit(0 if (3, 10) <= sys.version_info[:2] < (3, 15) else 1)' \
    || die "$("$PYTHON" --version 2>&1): litellm 1.108.7 needs Python >= 3.10, < 3.15"
  local key
  key="$(printf '%s\n%s\n%s\n' "$("$PYTHON" -c 'import sys; print(sys.version)')" \
    "${LITELLM_REQUIREMENTS[*]}" "$LITELLM_CONSTRAINTS" | sha)"

  if [[ -z "${FORCE:-}" && -f "$LITELLM_STAMP" && "$(cat "$LITELLM_STAMP")" == "$key" ]] \
    && [[ -x "$LITELLM_VENV/bin/litellm" ]] \
    && "$LITELLM_VENV/bin/python" -c 'import importlib.metadata as m; assert m.version("litellm") == "1.108.7"' \
      >/dev/null 2>&1; then
    log "litellm: up to date ($LITELLM_VENV: ${LITELLM_REQUIREMENTS[*]})"
    return
  fi

  local t0
  t0=$(now)
  make_venv litellm "$LITELLM_VENV"
  # Never committed, whatever the root .gitignore says.
  printf '*\n' >"$LITELLM_VENV/.gitignore"
  log "litellm: pip install ${LITELLM_REQUIREMENTS[*]} (+ pinned dependencies)"
  local constraints
  constraints="$(mktemp)"
  printf '%s\n' "$LITELLM_CONSTRAINTS" >"$constraints"
  if ! "$LITELLM_VENV/bin/python" -m pip install -q -c "$constraints" "${LITELLM_REQUIREMENTS[@]}"; then
    rm -f "$constraints"
    die "pip install litellm failed"
  fi
  rm -f "$constraints"
  # The import LiteLLM's CLI does at start (the remote price map is not fetched).
  LITELLM_LOCAL_MODEL_COST_MAP=True "$LITELLM_VENV/bin/python" -c 'import litellm.proxy.proxy_server' \
    || die "the LiteLLM venv does not import litellm.proxy after installing"
  [[ -x "$LITELLM_VENV/bin/litellm" ]] || die "$LITELLM_VENV/bin/litellm is missing after installing"
  printf '%s\n' "$key" >"$LITELLM_STAMP"
  log "litellm: installed in $(($(now) - t0)) s ($(du -sm "$LITELLM_VENV" | cut -f1) MB)"
}

install_python
install_node
install_litellm
# Its own script (apt needs root when chromium is missing; it takes its own lock).
"$ROOT/scripts/install-playwright.sh"
