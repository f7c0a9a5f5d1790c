#!/usr/bin/env bash
# Runs every test of the project. The README's second command; .ci/run calls it too.
#
# Installs what the tests need first (idempotent): MinIO, built from the Go module proxy, for
# the second, independent S3 implementation the conformance suite runs against.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== installing test prerequisites"
bash tests/scripts/minio.sh install
# The C tests run under valgrind, and again built by cc with ASan and UBSan.
if ! command -v valgrind >/dev/null && [[ $(id -u) == 0 ]]; then apt-get update -qq && apt-get install -y -qq valgrind; fi
# The C++ wrapper's tests build with CMake against GoogleTest.
if ! command -v cmake >/dev/null || [[ ! -d /usr/include/gtest ]]; then
    if [[ $(id -u) == 0 ]]; then apt-get update -qq && apt-get install -y -qq cmake libgtest-dev; fi
fi
# scripts/test-install.sh links the installed library through pkg-config, as the Go binding does.
if ! command -v pkg-config >/dev/null && [[ $(id -u) == 0 ]]; then apt-get update -qq && apt-get install -y -qq pkg-config; fi
# The multi-NIC test builds network namespaces with ip and shapes them with tc (iproute2).
if ! command -v ip >/dev/null || ! command -v tc >/dev/null; then
    if [[ $(id -u) == 0 ]]; then apt-get update -qq && apt-get install -y -qq iproute2; fi
fi

echo "== format, lints, and the committed C header against a fresh cbindgen run"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
# The Python extension is its own workspace (it links libpython only under maturin).
cargo fmt --manifest-path bindings/python/Cargo.toml -- --check
CARGO_TARGET_DIR=target cargo clippy --manifest-path bindings/python/Cargo.toml --locked -- -D warnings
scripts/check-header.sh

echo "== tests (Rust: unit, conformance suite on the embedded server and MinIO, CLI end to end, multi-NIC, C ABI under valgrind and ASan/UBSan; then C++)"
# Release mode: the multi-NIC test measures throughput, and the suites move ~1 GiB.
# The C tests link the shared library: build it first.
scripts/build-ffi.sh
log=$(mktemp)
trap 'rm -f "$log"' EXIT
set +e
cargo test --workspace --locked --release 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
echo "== C++ wrapper (CMake, GoogleTest, ctest; a plain build, then one with ASan and UBSan)"
bindings/cpp/run_tests.sh 2>&1 | tee -a "$log"
cpp_status=${PIPESTATUS[0]}
[[ $status -ne 0 ]] || status=$cpp_status
echo "== Go binding (go test -race)"
# cgo finds libgantry through pkg-config: the checkout's gantry.pc, written by scripts/build-ffi.sh.
export PKG_CONFIG_PATH="$PWD/target/release/pkgconfig"
(cd bindings/go && go vet ./... && go build ./... && go test -race -count=1 -v ./... && go test -tags debug -race -count=1 -v -run FinalizersUnderForcedGC ./...) 2>&1 | tee -a "$log"
go_status=${PIPESTATUS[0]}
[[ $status -ne 0 ]] || status=$go_status
echo "== Python package (maturin build into target/venv, pytest against gantry serve)"
bindings/python/run_tests.sh 2>&1 | tee -a "$log"
py_status=${PIPESTATUS[0]}
[[ $status -ne 0 ]] || status=$py_status
echo "== install and use from outside the checkout (scripts/test-install.sh: pkg-config, static, CMake, Go)"
scripts/test-install.sh 2>&1 | tee -a "$log"
install_status=${PIPESTATUS[0]}
[[ $status -ne 0 ]] || status=$install_status
echo "== benchmark harness smoke (benches/run.sh --smoke: tiny sizes, one round; checks it runs, measures nothing)"
benches/run.sh --smoke 2>&1 | tee -a "$log"
bench_status=${PIPESTATUS[0]}
[[ $status -ne 0 ]] || status=$bench_status
echo "== PyTorch benchmark smoke (benches/run.sh --torch --smoke: gantry.torch and s3torchconnector, tiny sizes)"
benches/run.sh --torch --smoke 2>&1 | tee -a "$log"
bench_status=${PIPESTATUS[0]}
[[ $status -ne 0 ]] || status=$bench_status
echo "== fleet benchmark smoke (benches/run.sh --fleet --smoke: gantry cp -r, s5cmd, aws s3 cp, 1/100 sizes)"
benches/run.sh --fleet --smoke 2>&1 | tee -a "$log"
bench_status=${PIPESTATUS[0]}
[[ $status -ne 0 ]] || status=$bench_status
set -e
# One closing line for the whole run (cargo prints one per test binary, the last often a
# doc-test binary with nothing in it).
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($i ~ /^passed;?$/) p += $(i-1); if ($i ~ /^failed;?$/) f += $(i-1) } }
     /tests passed, [0-9]+ tests failed out of [0-9]+/ { p += $NF - $(NF-4); f += $(NF-4) }
     /^--- PASS: / { p++ }
     /^--- FAIL: / { f++ }
     END { printf "%d passed, %d failed\n", p, f }' "$log"
exit "$status"
