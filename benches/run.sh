#!/usr/bin/env bash
# The one benchmark command: builds gantry's runner and the S3 server, installs the peers
# (awscrt, obstore; pinned in benches/requirements.txt) into the venv under target/venv, and
# prints the Markdown tables.
#
#   benches/run.sh                                   # every scenario, 3 rounds after a warm-up
#   benches/run.sh --scenarios bulk-get --rounds 5   # one scenario
#   benches/run.sh --scenarios faults-get --rounds 3 # recovery: slowdown under 503s and resets
#   benches/run.sh --smoke                           # tiny sizes, one round: does it still run?
#   benches/run.sh --out BENCHMARKS-latest.md        # also write the tables to a file
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p gantry-bench -p gantry-faults
py=$(scripts/python-env.sh benches/requirements.txt)
command -v curl >/dev/null || { echo "benches/run.sh: curl is needed for the floor reference" >&2; exit 1; }
exec "$py" benches/harness.py "$@"
