# Shared by benches/ab.sh and benches/memory.sh (sourced; ROOT is the repository root).

# The load generator (benches/load.rs): $LOAD if set, else built in release mode.
load_generator() {
  if [[ -z "${LOAD:-}" ]]; then
    LOAD="$(cd "$ROOT" && cargo build --release --bench load --message-format=json 2>/dev/null |
      python3 -c 'import json,sys
for l in sys.stdin:
    m = json.loads(l)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "load" and m.get("executable"):
        print(m["executable"])' | tail -1)"
  fi
  [[ -x "$LOAD" ]] || { echo "$(basename "$0"): no load generator (set LOAD)" >&2; exit 1; }
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
