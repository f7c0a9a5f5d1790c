#!/usr/bin/env bash
# Builds the C++ wrapper's tests with CMake and runs them with ctest against a `gantry serve`
# process this script starts (and stops), and a gantry-fault-server with its S3 Express double;
# then again built with ASan and UBSan. Needs target/release/{gantry,gantry-fault-server,libgantry.so}.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"$repo/target/release/gantry" serve --dir "$work/s3" --addr "127.0.0.1:$port" --bucket examples 2>/dev/null &
server=$!
# The S3 Express double (directory buckets, sessions, appends) for the GantryExpress tests.
express_port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"$repo/target/release/gantry-fault-server" --port "$express_port" --express-base-key AKIDBASE:base-secret >/dev/null 2>&1 &
express=$!
export GANTRY_EXPRESS_ENDPOINT="http://127.0.0.1:$express_port"
trap 'kill $server $express 2>/dev/null; rm -rf "$work"' EXIT
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$repo/bindings/cpp" -B "$work/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$work/build" >/dev/null
GANTRY_TEST_ENDPOINT="http://127.0.0.1:$port" ctest --test-dir "$work/build" --output-on-failure
# The same tests built with ASan (leak checks on) and UBSan. Only the test programs are
# instrumented; libgantry and GoogleTest are not, which ASan allows: the runtime linked into the
# executable intercepts every malloc/free, the library's included.
# On a fresh server (the suite creates its bucket), started while the build runs.
san_port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"$repo/target/release/gantry" serve --dir "$work/s3-san" --addr "127.0.0.1:$san_port" 2>/dev/null &
san_server=$!
trap 'kill $server $express $san_server 2>/dev/null; rm -rf "$work"' EXIT
san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
cmake -S "$repo/bindings/cpp" -B "$work/build-san" "${gen[@]}" -DCMAKE_BUILD_TYPE=Debug -DGANTRY_EXAMPLES=OFF \
    -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$work/build-san" >/dev/null
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    GANTRY_TEST_ENDPOINT="http://127.0.0.1:$san_port" ctest --test-dir "$work/build-san" --output-on-failure
# The examples copy a file up and down through the same server.
head -c 7340035 /dev/urandom > "$work/example.bin"
for ex in gantry_copy_c gantry_copy_cpp; do
    AWS_ACCESS_KEY_ID=gantry AWS_SECRET_ACCESS_KEY=gantry-secret-key \
        "$work/build/$ex" "http://127.0.0.1:$port" examples "$ex" "$work/example.bin" >/dev/null
    cmp "$work/example.bin" "$work/example.bin.back"
    rm "$work/example.bin.back"
    echo "example $ex: copied up and down, bytes identical"
done
