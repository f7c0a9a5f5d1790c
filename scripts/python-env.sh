#!/usr/bin/env bash
# Prints the path of the project's Python interpreter: a venv under target/venv (never the
# global interpreter), created on first use, with the given requirements files installed.
#
#   py=$(scripts/python-env.sh benches/requirements.txt)
#
# Idempotent and quiet: pip runs only when a requirements file changed since the last install
# (a stamp per file under the venv), so tests and benches can call it every time.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/venv
if [[ ! -x $venv/bin/python ]]; then
    mkdir -p target
    if ! python3 -m venv "$venv" >/dev/null 2>&1; then
        # Debian splits venv (and ensurepip) into its own package.
        if [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null; then
            ver=$(python3 -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
            apt-get update -qq >&2 && apt-get install -y -qq "python${ver}-venv" >&2
            rm -rf "$venv"
            python3 -m venv "$venv" >&2
        else
            echo "scripts/python-env.sh: python3 -m venv failed; install your distribution's python3-venv" >&2
            exit 1
        fi
    fi
fi
for req in "$@"; do
    stamp="$venv/.installed-$(echo "$req" | tr '/' '_')"
    if [[ ! -f $stamp || $req -nt $stamp ]]; then
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$req" >&2
        touch "$stamp"
    fi
done
echo "$PWD/$venv/bin/python"
