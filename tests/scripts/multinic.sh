#!/usr/bin/env bash
# Emulated multi-NIC host for tests and benchmarks: a client namespace and a server namespace
# joined by N veth pairs, each shaped with tbf in both directions.
#
#   multinic.sh up ID N MTU RATE     e.g. up 42 4 9000 400mbit
#   multinic.sh down ID
#
# Namespaces gmc$ID (client) and gms$ID (server). In the client namespace NIC k is gn$k
# (10.201.k.1/24); its peer gp$k (10.201.k.2/24) is in the server namespace. The server
# listens on 10.201.100.1, an address on the server namespace's loopback, so it is reachable
# through every pair.
#
# Why a socket bound to NIC k leaves through NIC k:
# - by interface (SO_BINDTODEVICE): the client has one /32 route to the server per NIC, via
#   that NIC's peer, with different metrics. An unbound socket takes the lowest metric (gn0);
#   a socket bound to gn$k may only use routes through gn$k, so it takes that NIC's route.
# - by source address: a policy rule "from 10.201.k.1 lookup table 100+k" sends packets with
#   that source to a table whose only route to the server is via gn$k.
# - the way back: the server replies to 10.201.k.1 over its connected route on gp$k. On the
#   client, such replies arrive on gn$k although the best route to the server is via gn0, so
#   reverse-path filtering is loose (2) there, or strict filtering would drop them.
# Both namespaces are ours alone: nothing touches the host's own interfaces or routes.
set -euo pipefail

cmd="${1:-}"; id="${2:-}"
[[ -n "$cmd" && -n "$id" ]] || { echo "usage: multinic.sh up ID N MTU RATE | down ID" >&2; exit 2; }
C="gmc$id"; S="gms$id"

down() {
    ip netns del "$C" 2>/dev/null || true
    ip netns del "$S" 2>/dev/null || true
}

up() {
    local n="$1" mtu="$2" rate="$3"
    down
    ip netns add "$C"
    ip netns add "$S"
    ip -n "$C" link set lo up
    ip -n "$S" link set lo up
    ip -n "$S" addr add 10.201.100.1/32 dev lo
    ip netns exec "$C" sysctl -qw net.ipv4.conf.all.rp_filter=2
    for ((k = 0; k < n; k++)); do
        ip link add "gn$k" netns "$C" type veth peer name "gp$k" netns "$S"
        ip -n "$C" link set "gn$k" mtu "$mtu" up
        ip -n "$S" link set "gp$k" mtu "$mtu" up
        ip -n "$C" addr add "10.201.$k.1/24" dev "gn$k"
        ip -n "$S" addr add "10.201.$k.2/24" dev "gp$k"
        ip netns exec "$C" sysctl -qw "net.ipv4.conf.gn$k.rp_filter=2"
        ip -n "$C" route add 10.201.100.1/32 via "10.201.$k.2" dev "gn$k" metric $((100 + k))
        ip -n "$C" route add 10.201.100.1/32 via "10.201.$k.2" dev "gn$k" table $((100 + k))
        ip -n "$C" rule add from "10.201.$k.1" lookup $((100 + k))
        tc -n "$C" qdisc add dev "gn$k" root tbf rate "$rate" burst 256kbit latency 50ms
        tc -n "$S" qdisc add dev "gp$k" root tbf rate "$rate" burst 256kbit latency 50ms
    done
}

case "$cmd" in
    up) shift 2; up "$@" ;;
    down) down ;;
    *) echo "unknown command $cmd" >&2; exit 2 ;;
esac
