#!/usr/bin/env bash
# Checks deploy/Dockerfile without a container engine or a registry (these machines have
# neither): what the image promises is exercised with the same files, commands and settings.
#
# 1. The build stage's dependency layer: its COPY lines and the stub-writing part of its first
#    RUN are carried out in a temporary directory exactly as written, and Cargo must then read
#    the whole workspace from what they left (`cargo fetch --offline --locked`: every member's
#    manifest copied, a stub for every declared bench, test and example, the lock file
#    matching). Every workspace member (`cargo metadata`) must also be named by a COPY line.
#    Then the same check on a copy of the Dockerfile with one crate's COPY line removed must
#    FAIL, so that the check is known to catch the mistake it exists for.
# 2. The runtime stage's promises, when run as root with unshare and setpriv: the release
#    binary started as the image's USER (uid 10001), with the image's ENV (plus what a user
#    must give: UPSTREAMS, PROXY_TOKENS), the model at the image's EMBED_MODEL path and the
#    data directory at its MANIFEST_PATH's folder, both fresh tmpfs mounts in a private mount
#    namespace. It must come up ready, answer mcp_search in hybrid mode, pass the image's
#    HEALTHCHECK command, and write files nowhere but its data directory (file permissions
#    alone keep it there).
#
# Not checked here: that the base images exist and build (the registry is unreachable), the
# runtime stage's apt-get and useradd, and the model stage's download (scripts/fetch-model.sh
# is the same script the tests run).
#
# Usage: scripts/check-image.sh [--static-only] [DOCKERFILE]
# Needs: cargo, python3; for part 2 also root, unshare, setpriv, and the model
# (scripts/fetch-model.sh). Builds the release binary when missing or older than the sources.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
static_only=false
if [[ "${1:-}" == "--static-only" ]]; then
  static_only=true
  shift
fi
DOCKERFILE="${1:-$ROOT/deploy/Dockerfile}"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
HOST="$(rustc -vV | sed -n 's/^host: //p')"

say() { printf 'check-image: %s\n' "$*"; }
die() { printf 'check-image: FAILED: %s\n' "$*" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/check-image.XXXXXX")"
cleanup_dirs=()
pids=()
cleanup() {
  for p in "${pids[@]:-}"; do [[ -n "$p" ]] && kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
  for d in "${cleanup_dirs[@]:-}"; do [[ -n "$d" ]] && rmdir "$d" 2>/dev/null || true; done
}
trap cleanup EXIT

# ------------------------------------------------------------------ reading the Dockerfile
# dockerfile STAGE WHAT FILE (dockerfile.py): prints what the shell needs from one stage (`build`, or `last`
# for the runtime stage). WHAT: `copies` (src<TAB>dest per COPY before the first RUN),
# `stubs` (the first RUN's shell up to its first `cargo build`), `workdir`, `env` (KEY=VALUE
# lines), `user`, `healthcheck` (the CMD's words, one per line), `cmd` (ENTRYPOINT and CMD words).
cat >"$work/dockerfile.py" <<'PY'
import json, shlex, sys

stage_name, what, path = sys.argv[1:4]
lines, current = [], ""
for raw in open(path, encoding="utf-8"):
    line = raw.rstrip("\n")
    if not current and line.lstrip().startswith("#"):
        continue
    if line.endswith("\\"):
        current += line[:-1] + " "
        continue
    current += line
    if current.strip():
        lines.append(current.strip())
    current = ""
stages, stage = [], None
for l in lines:
    word, _, rest = l.partition(" ")
    if word.upper() == "FROM":
        parts = rest.split()
        stage = {"name": parts[2] if len(parts) >= 3 and parts[1].upper() == "AS" else None, "ins": []}
        stages.append(stage)
    elif stage is not None:
        stage["ins"].append((word.upper(), rest.strip()))
if stage_name == "last":
    chosen = stages[-1]
else:
    matches = [s for s in stages if s["name"] == stage_name]
    if not matches:
        sys.exit(f"no stage named {stage_name}")
    chosen = matches[0]
ins = chosen["ins"]

def words(rest):
    rest = rest.strip()
    return json.loads(rest) if rest.startswith("[") else shlex.split(rest)

if what == "copies":
    for word, rest in ins:
        if word == "RUN":
            break
        if word == "COPY":
            parts = words(rest)
            if any(p.startswith("--") for p in parts):
                sys.exit(f"COPY with flags is not understood here: COPY {rest}")
            for src in parts[:-1]:
                print(f"{src}\t{parts[-1]}")
elif what == "stubs":
    run = next((rest for word, rest in ins if word == "RUN"), None)
    if run is None or "cargo build" not in run:
        sys.exit("the build stage's first RUN has no `cargo build`")
    print(run.split("cargo build")[0])
elif what == "workdir":
    print(next((rest for word, rest in ins if word == "WORKDIR"), "/"))
elif what == "env":
    for word, rest in ins:
        if word == "ENV":
            for item in shlex.split(rest):
                print(item)
elif what == "user":
    print(next((rest for word, rest in reversed(ins) if word == "USER"), "0:0"))
elif what == "healthcheck":
    hc = next((rest for word, rest in ins if word == "HEALTHCHECK"), None)
    if hc is None or " CMD " not in f" {hc} ":
        sys.exit("no HEALTHCHECK CMD")
    for w in words(hc.split("CMD", 1)[1]):
        print(w)
elif what == "cmd":
    for key in ("ENTRYPOINT", "CMD"):
        found = [rest for word, rest in ins if word == key]
        for w in (words(found[-1]) if found else []):
            print(w)
else:
    sys.exit(f"unknown: {what}")
PY
dockerfile() { python3 "$work/dockerfile.py" "$@"; }

# ------------------------------------------------------------------ 1. the build stage
# Carries out the dependency layer of DOCKERFILE in a fresh directory; prints why it fails.
check_build_stage() {
  local dockerfile="$1" dir
  dir="$(mktemp -d "$work/build.XXXXXX")"
  local copies stubs
  copies="$(dockerfile build copies "$dockerfile")" || return 1
  stubs="$(dockerfile build stubs "$dockerfile")" || return 1
  # every workspace member's manifest is copied
  local members missing=()
  members="$(cd "$ROOT" && cargo metadata --no-deps --offline --format-version 1 \
    | python3 -c 'import json,sys,os; m=json.load(sys.stdin); r=m["workspace_root"]
for p in m["packages"]:
    print(os.path.relpath(os.path.dirname(p["manifest_path"]), r))')"
  while read -r member; do
    local want="Cargo.toml"
    [[ "$member" != "." ]] && want="$member/Cargo.toml"
    grep -qxF "$want" <(cut -f1 <<<"$copies") || missing+=("$want")
  done <<<"$members"
  if ((${#missing[@]})); then
    echo "the build stage copies no ${missing[*]} (a workspace member's manifest)"
    return 1
  fi
  # the COPY lines, as Docker carries them out (a destination ending in / is a folder)
  while IFS=$'\t' read -r src dest; do
    [[ -e "$ROOT/$src" ]] || { echo "COPY source $src does not exist"; return 1; }
    if [[ "$dest" == */ || "$dest" == "." || "$dest" == "./" ]]; then
      mkdir -p "$dir/$dest"
      cp -r "$ROOT/$src" "$dir/$dest"
    else
      mkdir -p "$dir/$(dirname "$dest")"
      cp -r "$ROOT/$src" "$dir/$dest"
    fi
  done <<<"$copies"
  # the stub-writing part of the RUN, then Cargo reads the whole workspace
  (cd "$dir" && bash -c "$stubs" >/dev/null 2>&1) || { echo "the stub-writing shell failed"; return 1; }
  local out
  if ! out="$(cd "$dir" && cargo fetch --offline --locked --target "$HOST" 2>&1)"; then
    echo "Cargo cannot read the workspace the build stage leaves: $(grep -v '^$' <<<"$out" | head -4 | tr '\n' ' ')"
    return 1
  fi
}

say "1. the build stage of $DOCKERFILE"
(cd "$ROOT" && cargo fetch --locked --target "$HOST" >/dev/null 2>&1) || true # the cache for --offline
if ! why="$(check_build_stage "$DOCKERFILE")"; then
  die "$why"
fi
say "   every workspace member's manifest is copied and every declared target has a stub"

# the check must catch a missing crate line: drop the last crate's COPY line
mutated="$work/Dockerfile.missing-crate"
dropped="$(grep -m1 -E '^COPY crates/[^ ]+/Cargo.toml' "$DOCKERFILE" | tail -1 || true)"
[[ -n "$dropped" ]] || die "no 'COPY crates/<name>/Cargo.toml' line to drop in the self-test"
grep -vxF "$dropped" "$DOCKERFILE" >"$mutated"
if why="$(check_build_stage "$mutated")"; then
  die "the check passed a Dockerfile without '$dropped'"
fi
say "   without '$dropped' the check fails, as it must: $why"

if $static_only; then
  say "static checks passed (--static-only)"
  exit 0
fi

# ------------------------------------------------------------------ 2. the runtime stage
if [[ "$(id -u)" != 0 ]] || ! command -v unshare >/dev/null || ! command -v setpriv >/dev/null; then
  die "the runtime check needs root, unshare and setpriv (run with --static-only to skip it)"
fi

user="$(dockerfile last user "$DOCKERFILE")"
uid="${user%%:*}"
gid="${user##*:}"
[[ "$uid" =~ ^[0-9]+$ && "$uid" != 0 ]] || die "the image's USER is '$user', not a numeric non-root id"
mapfile -t image_env < <(dockerfile last env "$DOCKERFILE")
mapfile -t healthcheck < <(dockerfile last healthcheck "$DOCKERFILE")
mapfile -t command < <(dockerfile last cmd "$DOCKERFILE")
env_value() { local k="$1" kv; for kv in "${image_env[@]}"; do [[ "${kv%%=*}" == "$k" ]] && { echo "${kv#*=}"; return; }; done; }
model_path="$(env_value EMBED_MODEL)"
manifest_path="$(env_value MANIFEST_PATH)"
port="$(env_value PORT)"
[[ -n "$model_path" && -n "$manifest_path" && -n "$port" ]] || die "the image's ENV lacks EMBED_MODEL, MANIFEST_PATH or PORT"
data_dir="$(dirname "$manifest_path")"
model_root="$(dirname "$(dirname "$model_path")")" # /app of /app/models/<name>
say "2. the runtime stage: USER $uid:$gid, ENV ${image_env[*]}"
say "   command: ${command[*]}"

model_src="$ROOT/models/$(basename "$model_path")"
[[ -f "$model_src/model.safetensors" ]] || die "no model at $model_src (scripts/fetch-model.sh)"
say "   building the release binary (cargo build --release --bin mcp-search-proxy)"
(cd "$ROOT" && cargo build --release --locked --bin mcp-search-proxy >/dev/null 2>&1) || die "the release build failed"
binary="$TARGET_DIR/release/mcp-search-proxy"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  die "port $port (the image's PORT) is in use here; stop what listens there"
fi
for d in "$data_dir" "$model_root"; do
  if [[ ! -d "$d" ]]; then
    mkdir -p "$d"
    cleanup_dirs+=("$d")
  fi
done
upstream_port="$(free_port)"
token="check-image-$(date +%s%N)"

cat >"$work/inside.sh" <<'INSIDE'
set -euo pipefail
# private mounts: the image's data directory and model folder, fresh
mount -t tmpfs -o mode=0755 tmpfs "$DATA_DIR"
mount -t tmpfs -o mode=0755 tmpfs "$MODEL_ROOT"
mkdir -p "$(dirname "$MODEL_PATH")"
cp -r "$MODEL_SRC" "$MODEL_PATH"
chmod -R a-w "$MODEL_ROOT"
chown "$UID_GID" "$DATA_DIR"
# an array, not a function: a function run in the background is a subshell, and $! would
# name it instead of the process to stop
as_user=(setpriv --reuid "${UID_GID%%:*}" --regid "${UID_GID##*:}" --clear-groups)
"${as_user[@]}" env -i "$BINARY" demo-upstream --bind "127.0.0.1:$UPSTREAM_PORT" >"$WORK/upstream.log" 2>&1 &
upstream=$!
mapfile -t image_env <"$WORK/env"
mapfile -t command <"$WORK/command"
"${as_user[@]}" env -i "${image_env[@]}" "UPSTREAMS=http://127.0.0.1:$UPSTREAM_PORT/mcp" "PROXY_TOKENS=check:$TOKEN" \
  "$BINARY" "${command[@]:1}" >"$WORK/proxy.log" 2>&1 &
proxy=$!
stop() { kill "$proxy" "$upstream" 2>/dev/null || true; wait 2>/dev/null || true; }
trap stop EXIT
fail() { echo "check-image: FAILED: $*" >&2; echo "--- proxy log (last 20 lines)" >&2; tail -20 "$WORK/proxy.log" >&2; exit 1; }
# http METHOD URL [BODY]: the response body (python3's urllib: no curl needed)
http() {
  python3 - "$@" <<'PY'
import sys, urllib.request, os
method, url = sys.argv[1], sys.argv[2]
body = sys.argv[3].encode() if len(sys.argv) > 3 else None
req = urllib.request.Request(url, data=body, method=method, headers={
    "Authorization": "Bearer " + os.environ["TOKEN"], "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
try:
    with urllib.request.urlopen(req, timeout=10) as r:
        sys.stdout.write(r.read().decode())
except Exception as e:
    sys.stdout.write(getattr(e, "read", lambda: str(e).encode())().decode())
PY
}
# ready, and searching in hybrid mode (the catalog embedded with the image's model)
for _ in $(seq 1 240); do
  ready="$(http GET "http://127.0.0.1:$PORT/readyz" || true)"
  grep -q '"mode":"hybrid"' <<<"$ready" && break
  kill -0 "$proxy" 2>/dev/null || fail "the proxy exited"
  sleep 0.5
done
grep -q '"status":"ready"' <<<"$ready" || fail "not ready: $ready"
grep -q '"mode":"hybrid"' <<<"$ready" || fail "not hybrid within 120 s: $ready"
echo "check-image:    ready, hybrid: $ready"
answer="$(http POST "http://127.0.0.1:$PORT/mcp" \
  '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mcp_search","arguments":{"query":"send an email"}}}')"
grep -q 'quillmail-send_email' <<<"$answer" || fail "mcp_search did not find the demo's send_email: ${answer:0:300}"
echo "check-image:    mcp_search answers: ${answer:0:160}…"
mapfile -t healthcheck <"$WORK/healthcheck"
"${as_user[@]}" env -i "${image_env[@]}" "${healthcheck[@]}" || fail "the HEALTHCHECK command failed: ${healthcheck[*]}"
echo "check-image:    the HEALTHCHECK command succeeds"
[[ -s "$MANIFEST_PATH" ]] || fail "no manifest at $MANIFEST_PATH"
stop
trap - EXIT
# what the image's user wrote: only its data directory (the model is read-only, nothing else is its own)
written="$(find / \( -path /proc -o -path /sys -o -path /dev -o -path /run \) -prune -o -user "${UID_GID%%:*}" -print 2>/dev/null \
  | grep -v -e "^$DATA_DIR\$" -e "^$DATA_DIR/" || true)"
[[ -z "$written" ]] || fail "files written outside $DATA_DIR: $(head -5 <<<"$written" | tr '\n' ' ')"
echo "check-image:    files written only in $DATA_DIR: $(cd "$DATA_DIR" && ls | tr '\n' ' ')"
INSIDE
printf '%s\n' "${image_env[@]}" >"$work/env"
printf '%s\n' "${command[@]}" >"$work/command"
printf '%s\n' "${healthcheck[@]}" >"$work/healthcheck"
chmod 0755 "$work"
chmod 0644 "$work/env" "$work/command" "$work/healthcheck"

DATA_DIR="$data_dir" MODEL_ROOT="$model_root" MODEL_PATH="$model_path" MODEL_SRC="$model_src" \
  UID_GID="$uid:$gid" BINARY="$binary" UPSTREAM_PORT="$upstream_port" TOKEN="$token" PORT="$port" \
  MANIFEST_PATH="$manifest_path" WORK="$work" \
  unshare --mount --propagation private --fork bash "$work/inside.sh"
say "runtime promises hold"
