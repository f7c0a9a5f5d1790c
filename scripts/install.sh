#!/usr/bin/env bash
# The one install command. Builds libgantry (cargo --locked --release) and installs under PREFIX:
#
#   lib/libgantry.so.X.Y.Z           the shared library, soname libgantry.so.<ABI> (0.MINOR before 1.0)
#   lib/libgantry.so.<ABI>           -> libgantry.so.X.Y.Z  (what the loader looks for)
#   lib/libgantry.so                 -> libgantry.so.<ABI>  (what -lgantry finds)
#   lib/libgantry.a                  the static library
#   include/gantry.h                 the committed header, unchanged
#   include/gantry.hpp               the header-only C++17 wrapper
#   lib/pkgconfig/gantry.pc          -lgantry; Libs.private lists the system libraries of a static link
#   lib/pkgconfig/gantry-static.pc   libgantry.a and those system libraries
#   lib/cmake/gantry/gantryConfig.cmake, gantryConfigVersion.cmake
#                                    find_package(gantry 0.4): gantry::gantry, gantry::gantry_static
#
#   scripts/install.sh --prefix /usr/local
#   DESTDIR=/tmp/pkgroot scripts/install.sh --prefix /usr     # packaging: files go under DESTDIR,
#                                                             # the installed files name /usr
#
# Nothing installed refers to this checkout: the library has no RUNPATH, and the pkg-config and
# CMake files name only PREFIX (the CMake files compute it from their own location).
set -euo pipefail

usage() {
    echo "usage: scripts/install.sh --prefix DIR   (DESTDIR is honoured)" >&2
    exit 2
}
prefix=
while (($#)); do
    case $1 in
        --prefix) [[ $# -ge 2 ]] || usage; prefix=$2; shift 2 ;;
        --prefix=*) prefix=${1#--prefix=}; shift ;;
        *) usage ;;
    esac
done
[[ -n "$prefix" ]] || usage
# The pkg-config file names the prefix, so it must be absolute (relative to where we were run).
prefix=$(realpath -m -- "$prefix")
destdir=
[[ -z "${DESTDIR:-}" ]] || destdir=$(realpath -m -- "$DESTDIR")
dest="$destdir$prefix"
dest=${dest%/}
prefix_pc=${prefix%/}

cd "$(dirname "$0")/.."
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[[ "$version" =~ ^([0-9]+)\.([0-9]+)\.[0-9]+$ ]] || { echo "no workspace version in Cargo.toml" >&2; exit 1; }
major=${BASH_REMATCH[1]}
# 0.x: the minor version is the compatibility boundary (ffi/build.rs sets the soname from it).
if [[ $major == 0 ]]; then abi="0.${BASH_REMATCH[2]}"; else abi=$major; fi
soname="libgantry.so.$abi"

# The same build as for development (so neither rebuilds the other's): both libraries, and in
# the checkout's pkg-config file the system libraries a static link needs, as rustc lists them.
scripts/build-ffi.sh >&2
target_dir=$(cargo metadata --locked --no-deps --format-version 1 | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
native=$(sed -n 's/^Libs.private: //p' "$target_dir/release/pkgconfig/gantry.pc")
[[ -n "$native" ]] || { echo "no Libs.private in $target_dir/release/pkgconfig/gantry.pc" >&2; exit 1; }
lib="$target_dir/release/libgantry.so"
built_soname=$(objdump -p "$lib" | awk '/SONAME/ { print $2 }')
[[ "$built_soname" == "$soname" ]] || { echo "$lib has soname '$built_soname', expected $soname" >&2; exit 1; }
if readelf -d "$lib" | grep -Eq '\((RPATH|RUNPATH)\)'; then
    echo "$lib carries an RPATH/RUNPATH; an installed library must not" >&2
    exit 1
fi

install -d "$dest/lib/pkgconfig" "$dest/lib/cmake/gantry" "$dest/include"
install -m 755 "$lib" "$dest/lib/libgantry.so.$version"
ln -sfn "libgantry.so.$version" "$dest/lib/$soname"
ln -sfn "$soname" "$dest/lib/libgantry.so"
install -m 644 "$target_dir/release/libgantry.a" "$dest/lib/libgantry.a"
install -m 644 include/gantry.h bindings/cpp/gantry.hpp "$dest/include/"

cat > "$dest/lib/pkgconfig/gantry.pc" <<EOF
prefix=$prefix_pc
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: gantry
Description: Throughput-tuned S3 transfer engine (C ABI; gantry.hpp is its C++17 wrapper)
Version: $version
Libs: -L\${libdir} -lgantry
Libs.private: $native
Cflags: -I\${includedir}
EOF
# -lgantry finds libgantry.so whenever it is there, also with --static: a static link names the
# archive itself.
cat > "$dest/lib/pkgconfig/gantry-static.pc" <<EOF
prefix=$prefix_pc
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: gantry-static
Description: Throughput-tuned S3 transfer engine (C ABI), linked statically from libgantry.a
Version: $version
Libs: \${libdir}/libgantry.a $native
Cflags: -I\${includedir}
EOF
chmod 644 "$dest/lib/pkgconfig/gantry.pc" "$dest/lib/pkgconfig/gantry-static.pc"

# CMake wants library names, not -l flags.
cmake_libs=$(for flag in $native; do printf '%s;' "${flag#-l}"; done)
for f in gantryConfig gantryConfigVersion; do
    sed -e "s|@VERSION@|$version|g" -e "s|@VERSION_MAJOR@|$major|g" -e "s|@SONAME@|$soname|g" \
        -e "s|@STATIC_LIBS@|${cmake_libs%;}|g" "bindings/cpp/cmake/$f.cmake.in" > "$dest/lib/cmake/gantry/$f.cmake"
    chmod 644 "$dest/lib/cmake/gantry/$f.cmake"
done

echo "installed gantry $version (soname $soname) under $destdir$prefix" >&2
