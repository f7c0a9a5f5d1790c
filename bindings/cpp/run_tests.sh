#!/usr/bin/env bash
# Builds the C++ wrapper's tests with CMake and runs them with ctest against a `gantry serve`
# process this script starts (and stops). Needs target/release/{gantry,libgantry.so}.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"$repo/target/release/gantry" serve --dir "$work/s3" --addr "127.0.0.1:$port" --bucket examples 2>/dev/null &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$repo/bindings/cpp" -B "$work/build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$work/build" >/dev/null
GANTRY_TEST_ENDPOINT="http://127.0.0.1:$port" ctest --test-dir "$work/build" --output-on-failure
# The examples copy a file up and down through the same server.
head -c 7340035 /dev/urandom > "$work/example.bin"
for ex in gantry_copy_c gantry_copy_cpp; do
    AWS_ACCESS_KEY_ID=gantry AWS_SECRET_ACCESS_KEY=gantry-secret-key \
        "$work/build/$ex" "http://127.0.0.1:$port" examples "$ex" "$work/example.bin" >/dev/null
    cmp "$work/example.bin" "$work/example.bin.back"
    rm "$work/example.bin.back"
    echo "example $ex: copied up and down, bytes identical"
done
