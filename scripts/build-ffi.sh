#!/usr/bin/env bash
# Builds libgantry (release) and the soname link the dynamic loader looks for.
#   libgantry.so carries the soname libgantry.so.<ABI> (0.MINOR before 1.0): programs linked
#   with -lgantry load libgantry.so.<ABI>, so that name must exist next to the library.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --locked --release -p gantry-ffi "$@"
soname=$(objdump -p target/release/libgantry.so | awk '/SONAME/ { print $2 }')
[[ -n "$soname" ]] || { echo "libgantry.so has no SONAME" >&2; exit 1; }
ln -sf libgantry.so "target/release/$soname"
echo "built target/release/libgantry.so (soname $soname)"
