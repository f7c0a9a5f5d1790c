#!/usr/bin/env bash
# Multi-NIC benchmark: 4 emulated NICs (tests/scripts/multinic.sh) at RATE each, MTU 9000 and
# MTU 1500; gantry and the AWS CRT's S3Client (network_interface_names) download the same
# object over the same NICs with the same connection count, alternating, ROUNDS rounds after a
# warm-up. Prints aggregate throughput as a share of the NICs' total rate, client CPU seconds
# per GiB, and gantry/CRT ratios (medians).
#
#   sudo benches/multinic.sh [RATE_MBIT=800] [SIZE_MIB=256] [ROUNDS=3] [CONNECTIONS=16]
#
# Needs root, iproute2, cargo build --release, pip install awscrt.
set -euo pipefail
cd "$(dirname "$0")/.."
rate="${1:-800}"; size_mib="${2:-256}"; rounds="${3:-3}"; conns="${4:-16}"
id="b$$"; C="gmc$id"; S="gms$id"
work="$(mktemp -d)"
cleanup() { kill "${server_pid:-}" 2>/dev/null || true; bash tests/scripts/multinic.sh down "$id"; rm -rf "$work"; }
trap cleanup EXIT
export AWS_ACCESS_KEY_ID=gantry AWS_SECRET_ACCESS_KEY=gantry-secret-key
endpoint=http://10.201.100.1:8014
head -c $((size_mib << 20)) /dev/urandom > "$work/obj"
results="$work/results.jsonl"
for mtu in 9000 1500; do
    bash tests/scripts/multinic.sh up "$id" 4 "$mtu" "${rate}mbit"
    ip netns exec "$S" target/release/gantry serve --dir "$work/srv" --addr 10.201.100.1:8014 --bucket bkt 2>/dev/null &
    server_pid=$!
    until ip netns exec "$C" bash -c "exec 3<>/dev/tcp/10.201.100.1/8014" 2>/dev/null; do sleep 0.1; done
    ip netns exec "$C" target/release/gantry cp -q --endpoint-url $endpoint "$work/obj" s3://bkt/obj --nic gn0 --nic gn1 --nic gn2 --nic gn3
    for r in $(seq 0 "$rounds"); do
        g=$(ip netns exec "$C" /usr/bin/time -f '%U %S' -o "$work/t" target/release/gantry cp --json --endpoint-url $endpoint \
            --max-connections "$conns" --nic gn0 --nic gn1 --nic gn2 --nic gn3 s3://bkt/obj "$work/down")
        g=$(python3 -c "import json,sys;j=json.loads(sys.argv[1]);u,s=open(sys.argv[2]).read().split()[-2:];j.update(client='gantry',cpu_user_s=float(u),cpu_sys_s=float(s));print(json.dumps(j))" "$g" "$work/t")
        c=$(ip netns exec "$C" python3 benches/crt_cp.py get $endpoint bkt obj "$work/down" --max-connections "$conns" \
            --nic gn0 --nic gn1 --nic gn2 --nic gn3)
        if [[ $r -gt 0 ]]; then
            echo "$g" | python3 -c "import json,sys;j=json.load(sys.stdin);j['mtu']=$mtu;print(json.dumps(j))" >> "$results"
            echo "$c" | python3 -c "import json,sys;j=json.load(sys.stdin);j['mtu']=$mtu;print(json.dumps(j))" >> "$results"
        fi
    done
    kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=
    bash tests/scripts/multinic.sh down "$id"
done
python3 - "$results" "$rate" "$size_mib" "$conns" <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1])]
rate, size, conns = int(sys.argv[2]), sys.argv[3], sys.argv[4]
total = 4 * rate
print(f"4 NICs x {rate} Mbit/s (tbf), {size} MiB object, {conns} connections, medians of {len(rows)//4} rounds\n")
print("| MTU | client | Mbit/s | % of aggregate | CPU s/GiB |")
print("|---|---|---|---|---|")
med = {}
for mtu in (9000, 1500):
    for c in ("gantry", "awscrt"):
        rs = [r for r in rows if r["mtu"] == mtu and r["client"] == c]
        mbit = st.median(r["bytes"] * 8 / r["seconds"] / 1e6 for r in rs)
        cpu = st.median((r["cpu_user_s"] + r["cpu_sys_s"]) / (r["bytes"] / 2**30) for r in rs)
        med[(mtu, c)] = (mbit, cpu)
        print(f"| {mtu} | {c} | {mbit:.0f} | {100*mbit/total:.0f}% | {cpu:.2f} |")
print()
for mtu in (9000, 1500):
    g, c = med[(mtu, "gantry")], med[(mtu, "awscrt")]
    print(f"MTU {mtu}: gantry/CRT throughput {g[0]/c[0]:.2f}x, CPU per GiB {g[1]/c[1]:.2f}x")
PY
