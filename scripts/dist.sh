#!/usr/bin/env bash
# Makes the release archive target/dist/gantry-<version>-linux-<arch>.tar.gz: the install tree of
# scripts/install.sh, the CLI and the examples, built with --locked.
#
#   gantry-<version>-linux-x86_64/
#     bin/gantry                       the CLI
#     include/, lib/                   as scripts/install.sh installs them
#     share/gantry/examples/           copy.c, copy.cpp, go/copy/main.go
#     README.md
#
# The tree is relocatable: unpack it anywhere. The CMake package computes its prefix from its own
# location, and the pkg-config files here name theirs relative to their own directory
# (${pcfiledir}, understood by pkg-config and pkgconf).
set -euo pipefail
cd "$(dirname "$0")/.."
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[[ -n "$version" ]] || { echo "no workspace version in Cargo.toml" >&2; exit 1; }
name="gantry-$version-$(uname -s | tr '[:upper:]' '[:lower:]')-$(uname -m)"
dist="$PWD/target/dist"
stage="$dist/$name"
rm -rf "$stage" "$dist/$name.tar.gz"
mkdir -p "$dist"

scripts/install.sh --prefix "$stage"
sed -i 's|^prefix=.*|prefix=${pcfiledir}/../..|' "$stage/lib/pkgconfig/gantry.pc" "$stage/lib/pkgconfig/gantry-static.pc"

cargo build --locked --release -p gantry-cli
target_dir=$(cargo metadata --locked --no-deps --format-version 1 | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
install -D -m 755 "$target_dir/release/gantry" "$stage/bin/gantry"
install -D -m 644 examples/copy.c examples/copy.cpp -t "$stage/share/gantry/examples"
install -D -m 644 bindings/go/examples/copy/main.go "$stage/share/gantry/examples/go/copy/main.go"
install -m 644 README.md "$stage/README.md"

tar -C "$dist" --owner=0 --group=0 --numeric-owner --sort=name -czf "$dist/$name.tar.gz" "$name"
echo "made target/dist/$name.tar.gz"
