#!/usr/bin/env bash
# Builds the Python package into the project venv (target/venv) with maturin, sharing the
# workspace's target directory so the engine is not compiled twice, then runs its pytest
# suite against a `gantry serve` it starts (needs target/release/gantry).
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
py=$("$repo/scripts/python-env.sh" bindings/python/requirements-dev.txt)
cd "$repo/bindings/python"
CARGO_TARGET_DIR="$repo/target" VIRTUAL_ENV="$(dirname "$(dirname "$py")")" \
    "$py" -m maturin develop --release --locked --quiet
"$py" -m pytest -q tests
