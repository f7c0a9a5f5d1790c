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
#   benches/run.sh --fleet [--rows 1,2,3] [--rounds N] [--smoke]
#                                                    # gantry cp -r vs s5cmd and aws s3 cp (benches/fleet.py)
#   benches/run.sh --torch [--cases shards,objects,checkpoint,dcp] [--rounds N] [--smoke]
#                                                    # gantry.torch vs s3torchconnector (benches/torch.py)
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet -p gantry-bench -p gantry-faults
if [[ ${1:-} == --fleet ]]; then
    shift
    cargo build --release --quiet -p gantry-cli
    benches/s5cmd.sh
    py=$(scripts/python-env.sh benches/requirements.txt benches/requirements-fleet.txt)
    exec "$py" benches/fleet.py "$@"
fi
if [[ ${1:-} == --torch ]]; then
    shift
    # The Python package (built into the venv as the tests build it), torch and the connector.
    cargo build --release --quiet -p gantry-cli
    py=$(scripts/python-env.sh bindings/python/requirements-dev.txt benches/requirements.txt benches/requirements-torch.txt)
    (cd bindings/python && CARGO_TARGET_DIR="$PWD/../../target" VIRTUAL_ENV="$(dirname "$(dirname "$py")")" \
        "$py" -m maturin develop --release --locked --quiet)
    exec "$py" benches/torch.py "$@"
fi
py=$(scripts/python-env.sh benches/requirements.txt)
command -v curl >/dev/null || { echo "benches/run.sh: curl is needed for the floor reference" >&2; exit 1; }
exec "$py" benches/harness.py "$@"
