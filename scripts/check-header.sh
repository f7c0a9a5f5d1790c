#!/usr/bin/env bash
# Regenerates include/gantry.h with the pinned cbindgen and fails if the committed header
# differs (run with --write to update it). Installs the pinned cbindgen when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
CBINDGEN_VERSION=0.29.4
if ! cbindgen --version 2>/dev/null | grep -q " $CBINDGEN_VERSION\$"; then
    cargo install cbindgen --version "$CBINDGEN_VERSION" --locked --quiet
fi
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
cbindgen --config ffi/cbindgen.toml --crate gantry-ffi --output "$tmp" ffi 2>/dev/null
if [[ "${1:-}" == --write ]]; then
    cp "$tmp" include/gantry.h && chmod 644 include/gantry.h
elif ! diff -u include/gantry.h "$tmp"; then
    echo "include/gantry.h is stale: run scripts/check-header.sh --write and commit it" >&2
    exit 1
fi
