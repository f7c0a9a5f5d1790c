#!/usr/bin/env bash
# Multi-NIC benchmark: 4 emulated NICs (tests/scripts/multinic.sh) at RATE each, MTU 9000 and
# MTU 1500. On the same server, object, NICs and connection count, alternating, ROUNDS rounds
# after a warm-up:
#   gantry        `gantry cp` with its defaults (--nic x4, --max-connections CONNECTIONS)
#   gantry-rcvN   the same with --set tcp_recv_buffer=NKiB (fixed socket receive buffer);
#                 gantry-rcv256 runs by default
#   awscrt        the AWS CRT's S3Client with network_interface_names (benches/crt_cp.py)
#   curl          the floor: CONNECTIONS plain curl processes, one ranged GET each, bound to
#                 the NICs round-robin (no part logic, no client work beyond the socket read)
# Every client writes to /dev/null: the subject is the network path, not this VM's disk.
# Prints throughput as a share of the NICs' total rate, client CPU seconds per GiB, host CPU
# seconds per GiB (all busy time of both vCPUs: kernel packet work lands in whichever task
# happens to run, so only the host total compares fairly), packets (skbs) per GiB received on
# the client's NICs (what the kernel had to process one by one), and ratios to the CRT
# (medians).
#
#   sudo [CLIENTS="gantry gantry-rcv256 awscrt curl"] benches/multinic.sh \
#        [RATE_MBIT=800] [SIZE_MIB=1024] [ROUNDS=3] [CONNECTIONS=16]
#
# Needs root (namespaces, tc); installs what else it needs (iproute2, curl, awscrt) and builds
# gantry in release mode.
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in ip:iproute2 curl:curl; do
    command -v "${tool%%:*}" >/dev/null || { apt-get update -qq && apt-get install -y -qq "${tool#*:}"; }
done
py=$(scripts/python-env.sh benches/requirements.txt)
cargo build --release --quiet -p gantry-cli
rate="${1:-800}"; size_mib="${2:-1024}"; rounds="${3:-3}"; conns="${4:-16}"
id="b$$"; C="gmc$id"; S="gms$id"
work="$(mktemp -d)"
cleanup() { kill "${server_pid:-}" 2>/dev/null || true; bash tests/scripts/multinic.sh down "$id"; rm -rf "$work"; }
trap cleanup EXIT
export AWS_ACCESS_KEY_ID=gantry AWS_SECRET_ACCESS_KEY=gantry-secret-key
endpoint=http://10.201.100.1:8014
nics=(--nic gn0 --nic gn1 --nic gn2 --nic gn3)
head -c $((size_mib << 20)) /dev/urandom > "$work/obj"
results="$work/results.jsonl"

host_busy() { awk '/^cpu /{print $2+$3+$4+$7+$8, $5+$6}' /proc/stat; }
rx_skbs() { ip netns exec "$C" cat /sys/class/net/gn{0,1,2,3}/statistics/rx_packets | awk '{n += $1} END {print n}'; }

run_client() { # client -> one JSON line on stdout (bytes, seconds, cpu_user_s, cpu_sys_s)
    local client="$1" t0 t1
    case "$client" in
    gantry | gantry-rcv*)
        local extra=(); [[ $client == gantry-rcv* ]] && extra=(--set "tcp_recv_buffer=${client#gantry-rcv}KiB")
        ip netns exec "$C" /usr/bin/time -f '%U %S' -o "$work/t" target/release/gantry cp --json \
            --endpoint-url $endpoint --max-connections "$conns" "${nics[@]}" "${extra[@]}" s3://bkt/obj /dev/null ;;
    awscrt)
        ip netns exec "$C" /usr/bin/time -f '%U %S' -o "$work/t" "$py" benches/crt_cp.py get $endpoint bkt obj \
            /dev/null --max-connections "$conns" "${nics[@]}" ;;
    curl)
        t0=$(date +%s.%N)
        ip netns exec "$C" /usr/bin/time -f '%U %S' -o "$work/t" bash -c '
            n=$1; size=$2; step=$((size / n)); pids=
            for ((i = 0; i < n; i++)); do
                s=$((i * step)); e=$((i == n - 1 ? size - 1 : s + step - 1))
                curl -sSf -o /dev/null --interface gn$((i % 4)) -r $s-$e \
                    --aws-sigv4 aws:amz:us-east-1:s3 --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
                    -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$3/bkt/obj" & pids="$pids $!"
            done
            for p in $pids; do wait $p; done' _ "$conns" $((size_mib << 20)) "$endpoint"
        t1=$(date +%s.%N)
        echo "{\"bytes\": $((size_mib << 20)), \"seconds\": $("$py" -c "print($t1 - $t0)")}" ;;
    esac
}

read -ra clients <<< "${CLIENTS:-gantry gantry-rcv256 awscrt curl}"
[[ " ${clients[*]} " == *" awscrt "* ]] || { echo "CLIENTS must include awscrt (the reference)" >&2; exit 2; }
for mtu in 9000 1500; do
    bash tests/scripts/multinic.sh up "$id" 4 "$mtu" "${rate}mbit"
    ip netns exec "$S" target/release/gantry serve --dir "$work/srv" --addr 10.201.100.1:8014 --bucket bkt 2>/dev/null &
    server_pid=$!
    until ip netns exec "$C" bash -c "exec 3<>/dev/tcp/10.201.100.1/8014" 2>/dev/null; do sleep 0.1; done
    ip netns exec "$C" target/release/gantry cp -q --endpoint-url $endpoint "$work/obj" s3://bkt/obj "${nics[@]}"
    for r in $(seq 0 "$rounds"); do
        for c in "${clients[@]}"; do
            read -r b0 i0 < <(host_busy); p0=$(rx_skbs)
            j=$(run_client "$c")
            read -r b1 i1 < <(host_busy); p1=$(rx_skbs)
            [[ $r -gt 0 ]] || continue
            "$py" - "$j" "$work/t" "$c" "$mtu" $((b1 - b0)) $((i1 - i0)) $((p1 - p0)) >> "$results" <<'PY'
import json, os, sys
j = json.loads(sys.argv[1])
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
busy, idle = int(sys.argv[5]), int(sys.argv[6])
hz = os.sysconf("SC_CLK_TCK")
print(json.dumps({"client": sys.argv[3], "mtu": int(sys.argv[4]), "bytes": j["bytes"], "seconds": j["seconds"],
                  "cpu_s": u + s, "host_cpu_s": busy / hz, "host_busy": busy / max(1, busy + idle),
                  "rx_skbs": int(sys.argv[7])}))
PY
        done
    done
    kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=
    bash tests/scripts/multinic.sh down "$id"
done
"$py" - "$results" "$rate" "$size_mib" "$conns" "${clients[@]}" <<'PY'
import json, sys, statistics as st
rows = [json.loads(l) for l in open(sys.argv[1])]
rate, size, conns, clients = int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
total = 4 * rate
n = len(rows) // (2 * len(clients))
print(f"4 NICs x {rate} Mbit/s (tbf), {size} MiB object to /dev/null, {conns} connections, medians of {n} rounds\n")
print("| MTU | client | Mbit/s | % of aggregate | client CPU s/GiB | host CPU s/GiB | host busy | rx skbs/GiB | vs CRT |")
print("|---|---|---|---|---|---|---|---|---|")
for mtu in (9000, 1500):
    med = {}
    for c in clients:
        rs = [r for r in rows if r["mtu"] == mtu and r["client"] == c]
        gib = [r["bytes"] / 2**30 for r in rs]
        med[c] = (st.median(r["bytes"] * 8 / r["seconds"] / 1e6 for r in rs),
                  st.median(r["cpu_s"] / g for r, g in zip(rs, gib)),
                  st.median(r["host_cpu_s"] / g for r, g in zip(rs, gib)),
                  st.median(r["host_busy"] for r in rs),
                  st.median(r["rx_skbs"] / g for r, g in zip(rs, gib)))
    for c in clients:
        mbit, cpu, host, busy, skbs = med[c]
        print(f"| {mtu} | {c} | {mbit:.0f} | {100*mbit/total:.0f}% | {cpu:.2f} | {host:.2f} | {100*busy:.0f}% "
              f"| {skbs/1000:.0f}k | {mbit/med['awscrt'][0]:.2f}x |")
PY
