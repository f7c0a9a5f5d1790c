#!/usr/bin/env bash
# Installs gantry into a temporary prefix and uses it from outside the checkout, as a user who
# follows the README does, then runs every program it built against a `gantry serve` it starts:
#
#   - scripts/install.sh with DESTDIR (files land under it, name the prefix), then into PREFIX;
#   - the install tree: files, soname links, include/gantry.h identical to the committed one,
#     the library's SONAME and no RUNPATH, no path into the checkout in the .pc/CMake files;
#   - examples/copy.c with `pkg-config --cflags --libs gantry`, and statically with
#     gantry-static.pc (libgantry.a + the system libraries rustc lists), run with libgantry.so
#     moved away;
#   - a fresh CMake project: find_package(gantry 0.4) (1.0 and 0.5 refused), examples/copy.cpp
#     with gantry::gantry and with gantry::gantry_static;
#   - add_subdirectory(<checkout>/bindings/cpp) from outside, with GoogleTest made unfindable:
#     configures and builds without gantry's tests, examples or -Werror;
#   - the Go example in its own module (a `replace` to this checkout and `go mod vendor`, the
#     binding being unpublished) with only PKG_CONFIG_PATH set, and again with an rpath through
#     CGO_LDFLAGS;
#   - readelf -d on every program: NEEDED libgantry.so.<ABI> (none when static), no RUNPATH
#     into the checkout.
#
# Reuses the release build (target/release/gantry for the server; cargo finds libgantry fresh).
# Needs cc, c++, cmake, go, pkg-config, readelf.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
[[ "$work" != "$repo"/* ]] || { echo "the temporary directory $work is inside the checkout" >&2; exit 1; }
server=
cleanup() {
    [[ -z "$server" ]] || kill "$server" 2>/dev/null || true
    # Go's module cache marks its files read-only.
    chmod -R u+w "$work" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT
# Nothing from the caller's (or scripts/test.sh's development) environment may help.
unset PKG_CONFIG_PATH LD_LIBRARY_PATH CGO_CFLAGS CGO_CPPFLAGS CGO_LDFLAGS CMAKE_PREFIX_PATH DESTDIR

fail() {
    echo "FAIL: $*" >&2
    exit 1
}
ok() { echo "ok: $*"; }

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$repo/Cargo.toml" | head -n 1)
[[ "$version" =~ ^([0-9]+)\.([0-9]+)\. ]] || fail "no workspace version in Cargo.toml"
if [[ ${BASH_REMATCH[1]} == 0 ]]; then abi="0.${BASH_REMATCH[2]}"; else abi=${BASH_REMATCH[1]}; fi
soname="libgantry.so.$abi"

# ELF checks: $1 the file, $2 "shared" (needs libgantry.so.<ABI>) or "static" (needs no libgantry).
check_elf() {
    local dyn
    dyn=$(readelf -d "$1")
    if grep -qF "$repo" <<<"$(grep -E '\((RPATH|RUNPATH)\)' <<<"$dyn")"; then
        fail "$1 has an RPATH/RUNPATH into the checkout: $(grep -E 'RPATH|RUNPATH' <<<"$dyn")"
    fi
    case $2 in
        shared) grep -qF "Shared library: [$soname]" <<<"$dyn" || fail "$1 does not need $soname" ;;
        static) if grep -q 'Shared library: \[libgantry' <<<"$dyn"; then fail "$1 needs a libgantry.so"; fi ;;
    esac
}

echo "-- scripts/install.sh with DESTDIR"
DESTDIR="$work/destdir" "$repo/scripts/install.sh" --prefix /opt/gantry >"$work/install.log" 2>&1 ||
    { cat "$work/install.log"; fail "install with DESTDIR"; }
[[ "$(ls "$work/destdir")" == opt ]] || fail "DESTDIR holds more than opt/: $(ls "$work/destdir")"
[[ -f "$work/destdir/opt/gantry/lib/libgantry.so.$version" ]] || fail "nothing under DESTDIR/opt/gantry"
grep -qx 'prefix=/opt/gantry' "$work/destdir/opt/gantry/lib/pkgconfig/gantry.pc" || fail "gantry.pc does not name /opt/gantry"
ok "DESTDIR=D --prefix /opt/gantry: files under D/opt/gantry, gantry.pc names /opt/gantry"

echo "-- scripts/install.sh --prefix $work/prefix"
prefix="$work/prefix"
"$repo/scripts/install.sh" --prefix "$prefix" >"$work/install.log" 2>&1 || { cat "$work/install.log"; fail "install"; }
for f in "lib/libgantry.so.$version" "lib/$soname" lib/libgantry.so lib/libgantry.a include/gantry.h \
    include/gantry.hpp lib/pkgconfig/gantry.pc lib/pkgconfig/gantry-static.pc \
    lib/cmake/gantry/gantryConfig.cmake lib/cmake/gantry/gantryConfigVersion.cmake; do
    [[ -e "$prefix/$f" ]] || fail "$f not installed"
done
[[ "$(readlink "$prefix/lib/$soname")" == "libgantry.so.$version" ]] || fail "$soname does not link to libgantry.so.$version"
[[ "$(readlink "$prefix/lib/libgantry.so")" == "$soname" ]] || fail "libgantry.so does not link to $soname"
cmp "$repo/include/gantry.h" "$prefix/include/gantry.h" || fail "the installed gantry.h differs from include/gantry.h"
dyn=$(readelf -d "$prefix/lib/libgantry.so.$version")
grep -qF "Library soname: [$soname]" <<<"$dyn" || fail "the installed library's soname is not $soname"
if grep -qE '\((RPATH|RUNPATH)\)' <<<"$dyn"; then fail "the installed library has an RPATH/RUNPATH"; fi
if grep -rlF "$repo" "$prefix/lib/pkgconfig" "$prefix/lib/cmake" "$prefix/include"; then
    fail "installed files above name the checkout"
fi
ok "install tree: files, soname links, gantry.h identical, SONAME $soname, no RUNPATH, no checkout path"

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
[[ "$(pkg-config --modversion gantry)" == "$version" ]] || fail "pkg-config --modversion gantry"
# The two ways to a static link agree: gantry.pc's Libs.private and gantry-static.pc.
private=$(pkg-config --static --libs-only-l gantry | sed -e 's/-lgantry *//' -e 's/ *$//')
static=$(pkg-config --libs-only-l gantry-static | sed 's/ *$//')
[[ -n "$private" && "$private" == "$static" ]] || fail "Libs.private '$private' differs from gantry-static.pc's '$static'"
ok "pkg-config: gantry $version; static link adds: $static"

mkdir -p "$work/src" "$work/bin" "$work/data"
cp "$repo/examples/copy.c" "$repo/examples/copy.cpp" "$work/src/"

echo "-- C: examples/copy.c with pkg-config, shared and static"
# shellcheck disable=SC2046  # pkg-config's output is a list of flags
cc -Wall -Wextra -Werror -o "$work/bin/copy_c" "$work/src/copy.c" $(pkg-config --cflags --libs gantry)
check_elf "$work/bin/copy_c" shared
# shellcheck disable=SC2046
cc -Wall -Wextra -Werror -o "$work/bin/copy_c_static" "$work/src/copy.c" $(pkg-config --cflags --libs gantry-static)
check_elf "$work/bin/copy_c_static" static
ok "built copy_c (NEEDED $soname, no RUNPATH) and copy_c_static (no libgantry.so needed)"

echo "-- CMake: a fresh project with find_package(gantry 0.4)"
mkdir -p "$work/cmake"
cp "$repo/examples/copy.cpp" "$work/cmake/"
cat >"$work/cmake/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(gantry_consumer LANGUAGES C CXX)
foreach(too_new 1.0 0.5)
    find_package(gantry ${too_new} QUIET)
    if(gantry_FOUND)
        message(FATAL_ERROR "gantry ${gantry_VERSION} accepted a request for ${too_new}")
    endif()
endforeach()
find_package(gantry 0.4 REQUIRED)
message(STATUS "gantry ${gantry_VERSION} from ${gantry_DIR}")
add_executable(copy_cpp copy.cpp)
target_compile_features(copy_cpp PRIVATE cxx_std_17)
target_link_libraries(copy_cpp PRIVATE gantry::gantry)
add_executable(copy_cpp_static copy.cpp)
target_compile_features(copy_cpp_static PRIVATE cxx_std_17)
target_link_libraries(copy_cpp_static PRIVATE gantry::gantry_static)
EOF
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$work/cmake" -B "$work/cmake/build" "${gen[@]}" -DCMAKE_PREFIX_PATH="$prefix" >"$work/cmake.log" 2>&1 ||
    { cat "$work/cmake.log"; fail "cmake configure with find_package(gantry)"; }
cmake --build "$work/cmake/build" >>"$work/cmake.log" 2>&1 || { cat "$work/cmake.log"; fail "cmake build"; }
check_elf "$work/cmake/build/copy_cpp" shared
check_elf "$work/cmake/build/copy_cpp_static" static
ok "find_package(gantry 0.4) (1.0, 0.5 refused): copy_cpp with gantry::gantry, copy_cpp_static with gantry::gantry_static"

echo "-- CMake: add_subdirectory(<checkout>/bindings/cpp) from outside, GoogleTest unfindable"
mkdir -p "$work/subdir"
cp "$repo/examples/copy.cpp" "$work/subdir/"
cat >"$work/subdir/CMakeLists.txt" <<EOF
cmake_minimum_required(VERSION 3.16)
project(gantry_subdir_consumer LANGUAGES CXX)
add_subdirectory("$repo/bindings/cpp" gantry)
add_executable(copy_cpp copy.cpp)
target_compile_features(copy_cpp PRIVATE cxx_std_17)
target_link_libraries(copy_cpp PRIVATE gantry::gantry)
EOF
cmake -S "$work/subdir" -B "$work/subdir/build" "${gen[@]}" -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON >"$work/subdir.log" 2>&1 ||
    { cat "$work/subdir.log"; fail "add_subdirectory configure without GoogleTest"; }
cmake --build "$work/subdir/build" >>"$work/subdir.log" 2>&1 || { cat "$work/subdir.log"; fail "add_subdirectory build"; }
if cmake --build "$work/subdir/build" --target help | grep -E 'gantry_(cpp_tests|header_alone|copy_c|copy_cpp)'; then
    fail "add_subdirectory defines gantry's own tests or examples (above)"
fi
if grep -rqF --include='*.ninja' --include=flags.make -e -Werror "$work/subdir/build"; then
    fail "-Werror reached the consumer's build"
fi
ok "add_subdirectory: builds without GoogleTest, no gantry tests/examples, no -Werror"

echo "-- Go: the example in its own module, only PKG_CONFIG_PATH set"
gomod=github.com/gantry-s3/gantry/bindings/go
mkdir -p "$work/go"
cp "$repo/bindings/go/examples/copy/main.go" "$work/go/"
cp "$repo/bindings/go/go.sum" "$work/go/"
cat >"$work/go/go.mod" <<EOF
module example.com/gantry-consumer

go 1.24

require $gomod v$version

// Until the binding is published: use a checkout.
replace $gomod => $repo/bindings/go
EOF
# `go mod vendor`, as the README offers for an unpublished binding: the binding is then compiled
# from this run's own directory. Go's build cache does not notice what pkg-config answers
# (golang/go#24544), so a binding compiled from the checkout's directory could be reused with
# the -L of another gantry.pc (the checkout's, or an earlier run's prefix); the vendored copy's
# directory is part of the cache key, and this costs one package instead of `go build -a`.
(cd "$work/go" && go mod tidy >"$work/go.log" 2>&1 && go mod vendor >>"$work/go.log" 2>&1 &&
    go build -o "$work/bin/copy_go" . >>"$work/go.log" 2>&1) || { cat "$work/go.log"; fail "go build with PKG_CONFIG_PATH"; }
check_elf "$work/bin/copy_go" shared
if grep -qE '\((RPATH|RUNPATH)\)' <<<"$(readelf -d "$work/bin/copy_go")"; then fail "copy_go has an RPATH/RUNPATH"; fi
(cd "$work/go" && CGO_LDFLAGS="-Wl,-rpath,$prefix/lib" go build -o "$work/bin/copy_go_rpath" . >>"$work/go.log" 2>&1) ||
    { cat "$work/go.log"; fail "go build with CGO_LDFLAGS"; }
check_elf "$work/bin/copy_go_rpath" shared
grep -qF "[$prefix/lib]" <<<"$(readelf -d "$work/bin/copy_go_rpath")" || fail "CGO_LDFLAGS' rpath did not reach copy_go_rpath"
ok "copy_go (NEEDED $soname, no RUNPATH) and copy_go_rpath (RUNPATH $prefix/lib from CGO_LDFLAGS)"

echo "-- running every program against gantry serve"
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
"$repo/target/release/gantry" serve --dir "$work/s3" --addr "127.0.0.1:$port" --bucket consumer 2>"$work/serve.log" &
server=$!
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break
    sleep 0.1
done
export AWS_ACCESS_KEY_ID=gantry AWS_SECRET_ACCESS_KEY=gantry-secret-key
# Over one part (8 MiB), so uploads are multipart.
head -c 9437187 /dev/urandom >"$work/data/payload"
run() { # $1 name, $2... the program; LD_LIBRARY_PATH as the caller sets it
    local name=$1
    shift
    cp "$work/data/payload" "$work/data/$name"
    "$@" "http://127.0.0.1:$port" consumer "$name" "$work/data/$name" >/dev/null || fail "$name failed"
    cmp "$work/data/payload" "$work/data/$name.back" || fail "$name: downloaded bytes differ"
    ok "$name: copied up and down, bytes identical"
}
# The programs linked with -lgantry and no rpath find the library as users' do without ldconfig.
# (Output is captured before grep -q reads it: under pipefail, `ldd | grep -q` fails whenever
# grep exits before ldd has written everything and ldd dies of SIGPIPE.)
grep -qF "$prefix/lib/$soname" <<<"$(LD_LIBRARY_PATH="$prefix/lib" ldd "$work/bin/copy_c")" || fail "copy_c does not load $prefix/lib/$soname"
LD_LIBRARY_PATH="$prefix/lib" run copy_c "$work/bin/copy_c"
LD_LIBRARY_PATH="$prefix/lib" run copy_go "$work/bin/copy_go"
run copy_go_rpath "$work/bin/copy_go_rpath"
run copy_cpp "$work/cmake/build/copy_cpp"
# No libgantry.so anywhere the static programs could find one.
mkdir "$work/hidden"
mv "$prefix/lib/libgantry.so"* "$work/hidden/"
run copy_c_static "$work/bin/copy_c_static"
run copy_cpp_static "$work/cmake/build/copy_cpp_static"
mv "$work/hidden/"* "$prefix/lib/"
echo "install and consumer checks passed"
