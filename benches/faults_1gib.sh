#!/usr/bin/env bash
# Recovery under faults, side by side: a 1 GiB download from the fault-injecting server with a
# 503 SlowDown every 50 GETs and a connection reset mid-body every 40 GETs, against the same
# download with no faults, for `gantry cp` and the AWS CRT's S3Client (benches/crt_cp.py), same
# part size and connection count, alternating, several rounds after a warm-up round.
#
#   benches/faults_1gib.sh [SIZE_MIB] [ROUNDS]
#
# Prints a Markdown table: seconds (median), GETs sent and faults fired (from the server's
# counters), the client's peak RSS, and the slowdown of the faulty run against the clean one per client.
# Needs: cargo build --release -p gantry-cli -p gantry-faults (awscrt goes into target/venv).
set -euo pipefail
cd "$(dirname "$0")/.."
py=$(scripts/python-env.sh benches/requirements.txt)
size_mib="${1:-1024}"; rounds="${2:-3}"
work="$(mktemp -d)"; trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
export AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret
part=$((8 << 20)); conns=16
head -c $((size_mib << 20)) /dev/urandom > "$work/src.bin"
want=$(sha256sum < "$work/src.bin")
results="$work/results.jsonl"

run_one() { # who mode round
    local who=$1 mode=$2 round=$3 port faults=()
    port=$("$py" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
    [[ $mode == faulty ]] && faults=(--fault "503,op=GetObject,every=50" --fault "reset-mid,op=GetObject,every=40")
    target/release/gantry-fault-server --port "$port" "${faults[@]}" > "$work/server.out" &
    local pid=$!
    for _ in $(seq 50); do grep -q listening "$work/server.out" 2>/dev/null && break; sleep 0.1; done
    local ep="http://127.0.0.1:$port"
    curl -sf -X PUT "$ep/bench" >/dev/null
    target/release/gantry cp --endpoint-url "$ep" --part-size 8MiB --max-connections $conns "$work/src.bin" s3://bench/obj >/dev/null
    rm -f "$work/down.bin"
    local line
    if [[ $who == gantry ]]; then
        /usr/bin/time -f '%U %S %M' -o "$work/t" target/release/gantry cp --json --endpoint-url "$ep" \
            --part-size 8MiB --max-connections $conns s3://bench/obj "$work/down.bin" > "$work/j"
        line=$("$py" -c 'import json,sys;j=json.load(open(sys.argv[1]));u,s,m=open(sys.argv[2]).read().split()[-3:];j["cpu_s"]=float(u)+float(s);j["max_rss_kib"]=int(m);print(json.dumps(j))' "$work/j" "$work/t")
    else
        line=$("$py" benches/crt_cp.py get "$ep" bench obj "$work/down.bin" --part-size $part --max-connections $conns)
    fi
    kill -TERM $pid; wait $pid || true
    [[ "$(sha256sum < "$work/down.bin")" == "$want" ]] || { echo "$who $mode: downloaded bytes differ" >&2; exit 1; }
    local summary; summary=$(tail -n 1 "$work/server.out")
    [[ $round -gt 0 ]] && "$py" -c 'import json,sys;j=json.loads(sys.argv[1]);s=json.loads(sys.argv[2]);j.update(who=sys.argv[3],mode=sys.argv[4],gets=s["by_op"].get("GetObject",0),faults=s["faults_fired"]);print(json.dumps(j))' "$line" "$summary" "$who" "$mode" >> "$results"
    return 0
}

for r in $(seq 0 "$rounds"); do   # round 0 warms up and is not counted
    for who in gantry crt; do
        for mode in clean faulty; do run_one $who $mode "$r"; done
    done
done
"$py" - "$results" "$size_mib" <<'PY'
import json,sys,statistics as st
rows=[json.loads(l) for l in open(sys.argv[1])]
print(f"object: {sys.argv[2]} MiB, part 8 MiB, 16 connections, rounds: {len(rows)//4}\n")
print("| client | run | seconds (median) | MiB/s | GETs (median) | faults fired (median) | peak RSS MiB |")
print("|---|---|---|---|---|---|---|")
secs={}
for who in ("gantry","crt"):
    for mode in ("clean","faulty"):
        rs=[r for r in rows if r["who"]==who and r["mode"]==mode]
        s=st.median(r["seconds"] for r in rs); secs[(who,mode)]=s
        print(f"| {who} | {mode} | {s:.2f} | {st.median(r['mib_per_s'] for r in rs):.0f} | {st.median(r['gets'] for r in rs):.0f} | {st.median(r['faults'] for r in rs):.0f} | {max(r['max_rss_kib'] for r in rs)/1024:.0f} |")
print()
for who in ("gantry","crt"):
    print(f"{who}: faulty/clean time {secs[(who,'faulty')]/secs[(who,'clean')]:.2f}x")
print(f"faulty run, gantry/CRT time: {secs[('gantry','faulty')]/secs[('crt','faulty')]:.2f}x")
PY
