#!/usr/bin/env bash
# Builds libgantry (release, --locked): libgantry.so and libgantry.a. scripts/install.sh builds
# through this script; on its own it serves development in this checkout:
#   libgantry.so carries the soname libgantry.so.<ABI> (0.MINOR before 1.0): programs linked
#   with -lgantry load libgantry.so.<ABI>, so that name must exist next to the library.
#   target/release/pkgconfig/gantry.pc points into this checkout, for the in-tree Go binding
#   and its tests (PKG_CONFIG_PATH=$PWD/target/release/pkgconfig). It links with an RPATH into
#   target/release, so it is never installed. Its Libs.private are the system libraries a static
#   link needs, as rustc prints them (only when asked, and only while linking the staticlib:
#   hence `cargo rustc`; scripts/install.sh reads them from here rather than asking again with
#   other arguments, which would rebuild the crate).
set -euo pipefail
cd "$(dirname "$0")/.."
target_dir=$(cargo metadata --locked --no-deps --format-version 1 | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
out="$target_dir/release"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo rustc --locked --release -p gantry-ffi --lib "$@" -- --print native-static-libs 2>&1 | tee "$log" >&2
native=$(sed -n 's/.*native-static-libs: //p' "$log" | head -n 1)
[[ -n "$native" ]] || { echo "rustc printed no native-static-libs line" >&2; exit 1; }
soname=$(objdump -p "$out/libgantry.so" | awk '/SONAME/ { print $2 }')
[[ -n "$soname" ]] || { echo "libgantry.so has no SONAME" >&2; exit 1; }
ln -sf libgantry.so "$out/$soname"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
mkdir -p "$out/pkgconfig"
cat > "$out/pkgconfig/gantry.pc" <<PC
# Development only (scripts/build-ffi.sh): links libgantry from this checkout. Never installed.
prefix=$PWD
libdir=$out
includedir=\${prefix}/include

Name: gantry
Description: gantry's C ABI from the checkout $PWD (development only)
Version: $version
Libs: -L\${libdir} -Wl,-rpath,\${libdir} -lgantry
Libs.private: $native
Cflags: -I\${includedir} -I\${prefix}/bindings/cpp
PC
echo "built $out/libgantry.so (soname $soname), libgantry.a and pkgconfig/gantry.pc"
