#!/usr/bin/env bash
# Side-by-side: `gantry cp` against the AWS CRT's S3Client (benches/crt_cp.py) on the same
# server, object and part size, alternating, several rounds. Prints a Markdown table of
# MiB/s and client CPU seconds (user+sys) per GiB, with the median ratio gantry/CRT.
#
#   benches/compare_cp.sh [serve|minio] [SIZE_MIB] [ROUNDS]
#
# Needs: cargo build --release; for minio: tests/scripts/minio.sh install (awscrt goes into
# target/venv).
set -euo pipefail
cd "$(dirname "$0")/.."
py=$(scripts/python-env.sh benches/requirements.txt)
server="${1:-serve}"; size_mib="${2:-1024}"; rounds="${3:-3}"
work="$(mktemp -d)"; trap 'kill $(jobs -p) 2>/dev/null || true; [[ $server == minio ]] && bash tests/scripts/minio.sh stop "$work/minio"; rm -rf "$work"' EXIT
port=$("$py" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
endpoint="http://127.0.0.1:$port"
if [[ $server == minio ]]; then
    export AWS_ACCESS_KEY_ID=gantryadmin AWS_SECRET_ACCESS_KEY=gantrysecret123
    bash tests/scripts/minio.sh start "$work/minio" "$port"
    mkdir -p "$work/minio/data/bench"   # a bucket is a directory to MinIO's single-drive mode
else
    export AWS_ACCESS_KEY_ID=gantry AWS_SECRET_ACCESS_KEY=gantry-secret-key
    target/release/gantry serve --dir "$work/srv" --addr "127.0.0.1:$port" --bucket bench 2>/dev/null &
    sleep 0.5
fi
head -c $((size_mib << 20)) /dev/urandom > "$work/src.bin"
want=$(sha256sum < "$work/src.bin")
gantry_run() { # op -> json with cpu
    local out; out=$( { /usr/bin/time -f '%U %S' target/release/gantry cp --json --endpoint-url "$endpoint" "$@" 2>"$work/t" >"$work/j"; } ; cat "$work/j")
    "$py" - "$work/j" "$work/t" <<'PY'
import json,sys
j=json.load(open(sys.argv[1])); u,s=open(sys.argv[2]).read().split()[-2:]
j["cpu_user_s"]=float(u); j["cpu_sys_s"]=float(s); j["client"]="gantry"; print(json.dumps(j))
PY
}
results="$work/results.jsonl"
for r in $(seq 0 "$rounds"); do   # round 0 is the warm-up, not counted
    for who in gantry crt; do
        rm -f "$work/down.bin"
        if [[ $who == gantry ]]; then
            up=$(gantry_run "$work/src.bin" "s3://bench/obj-$who")
            down=$(gantry_run "s3://bench/obj-$who" "$work/down.bin")
        else
            up=$("$py" benches/crt_cp.py put "$endpoint" bench "obj-$who" "$work/src.bin")
            down=$("$py" benches/crt_cp.py get "$endpoint" bench "obj-$who" "$work/down.bin")
        fi
        [[ "$(sha256sum < "$work/down.bin")" == "$want" ]] || { echo "$who: downloaded bytes differ" >&2; exit 1; }
        if [[ $r -gt 0 ]]; then echo "$up" >> "$results"; echo "$down" >> "$results"; fi
    done
done
"$py" - "$results" "$server" "$size_mib" <<'PY'
import json,sys,statistics as st
rows=[json.loads(l) for l in open(sys.argv[1])]
print(f"server: {sys.argv[2]}, object: {sys.argv[3]} MiB, rounds: {len(rows)//4}\n")
print("| direction | client | MiB/s (median) | CPU s/GiB (median) |")
print("|---|---|---|---|")
med={}
for d in ("upload","download"):
    for c in ("gantry","awscrt"):
        rs=[r for r in rows if r["direction"]==d and r["client"]==c]
        mibs=st.median(r["mib_per_s"] for r in rs)
        cpu=st.median((r["cpu_user_s"]+r["cpu_sys_s"])/(r["bytes"]/2**30) for r in rs)
        med[(d,c)]=(mibs,cpu)
        print(f"| {d} | {c} | {mibs:.0f} | {cpu:.2f} |")
print()
for d in ("upload","download"):
    g,c=med[(d,"gantry")],med[(d,"awscrt")]
    print(f"{d}: gantry/CRT throughput {g[0]/c[0]:.2f}x, CPU per GiB {g[1]/c[1]:.2f}x")
PY
