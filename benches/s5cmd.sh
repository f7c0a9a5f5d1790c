#!/usr/bin/env bash
# Builds s5cmd 2.3.0 into target/s5cmd-bin/s5cmd (idempotent), the fleet benchmark's peer.
# `go install github.com/peak/s5cmd/v2@v2.3.0` fails here: the Go module proxy reachable from
# this machine answers the module's version list with 403, which go install reads for
# deprecations. A throwaway module requiring the exact version downloads it without the list.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
bin="$repo/target/s5cmd-bin/s5cmd"
version=v2.3.0
if [[ -x $bin && -f $bin.version && $(cat "$bin.version") == "$version" ]]; then
    exit 0
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
printf 'module s5build\n\ngo 1.24\n\nrequire github.com/peak/s5cmd/v2 %s\n' "$version" > go.mod
printf 'package main\n\nimport _ "github.com/peak/s5cmd/v2/command"\n\nfunc main() {}\n' > tools.go
GOFLAGS=-mod=mod go mod tidy >&2
mkdir -p "$(dirname "$bin")"
GOFLAGS=-mod=mod go build -o "$bin" github.com/peak/s5cmd/v2 >&2
echo "$version" > "$bin.version"
