#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Test topologies for the ethdev driver (network namespaces; traffic never leaves them).
#
#   unio-topology.sh veth up|down NAME
#       NAME-a:va <-veth-> NAME-b:vb                     (direct pair)
#   unio-topology.sh veth up NAME [--mtu MTU]
#   unio-topology.sh bridge up|down NAME [--loss PCT] [--rate RATE] [--mtu MTU]
#       NAME-a:va <-> NAME-m:ma [br0] NAME-m:mb <-> NAME-b:vb
#       --loss PCT: nft drops PCT % of the IPv4/UDP frames entering the bridge (both ways)
#       --rate RATE: tc tbf limits the bridge's egress toward vb (e.g. 100mbit)
#   unio-topology.sh hub up|down NAME [--mtu MTU]
#       NAME-a: va, vb, vc, veths whose peers are ports of bridge br0 in NAME-a too: three
#       ports on one Ethernet in one namespace (a third process; loopback carries control)
#   --mtu MTU sets the MTU of every veth (jumbo frames), default 1500; 3442 is the largest
#       the ethdev driver uses over af_xdp (its umem frames are a page) and the setting
#       recommended for bulk over af_xdp; 9000 for af_packet (framesz=9216,blocksz=36864)
#
# MACs: va 02:00:00:00:00:0a, vb 02:00:00:00:00:0b, vc 02:00:00:00:00:0c.  "down" is
# idempotent and removes the namespaces, and with them the veths, the bridge, the nft table
# and the qdisc.
set -e

usage() {
	echo "usage: $0 veth|bridge|hub up|down NAME [--loss PCT] [--rate RATE] [--mtu MTU]" >&2
	exit 2
}

case ${1:-} in -h|--help) sed -n '3,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;; esac
[ $# -ge 3 ] || usage
kind=$1 op=$2 name=$3
shift 3
loss=0 rate= mtu=1500
while [ $# -gt 0 ]; do
	case $1 in
	--loss) loss=$2; shift 2 ;;
	--rate) rate=$2; shift 2 ;;
	--mtu) mtu=$2; shift 2 ;;
	*) usage ;;
	esac
done
case $name in *[!A-Za-z0-9_-]*|'') usage ;; esac
[ ${#name} -le 24 ] || { echo "$0: NAME too long" >&2; exit 2; }

mkns() {
	ip netns add "$1"
	ip -n "$1" link set lo up
}

down() {
	for ns in "$name-a" "$name-b" "$name-m"; do
		ip netns del "$ns" 2>/dev/null || true
	done
}

veth_up() {
	mkns "$name-a"
	mkns "$name-b"
	ip link add "u$$a" netns "$name-a" type veth peer name "u$$b" netns "$name-b"
	ip -n "$name-a" link set "u$$a" name va
	ip -n "$name-b" link set "u$$b" name vb
}

bridge_up() {
	mkns "$name-a"
	mkns "$name-b"
	mkns "$name-m"
	ip link add "u$$a" netns "$name-a" type veth peer name "u$$ma" netns "$name-m"
	ip link add "u$$b" netns "$name-b" type veth peer name "u$$mb" netns "$name-m"
	ip -n "$name-a" link set "u$$a" name va
	ip -n "$name-b" link set "u$$b" name vb
	ip -n "$name-m" link set "u$$ma" name ma
	ip -n "$name-m" link set "u$$mb" name mb
	ip -n "$name-m" link add br0 type bridge
	ip -n "$name-m" link set dev ma master br0 up
	ip -n "$name-m" link set dev mb master br0 up
	ip -n "$name-m" link set br0 up
	if [ "$loss" != 0 ]; then
		ip netns exec "$name-m" nft -f - <<-NFT
		table netdev unio {
			chain ina { type filter hook ingress device ma priority 0; ip protocol udp numgen random mod 100 < $loss counter drop; }
			chain inb { type filter hook ingress device mb priority 0; ip protocol udp numgen random mod 100 < $loss counter drop; }
		}
		NFT
	fi
	if [ -n "$rate" ]; then
		ip -n "$name-m" link set mb txqueuelen 1000
		ip netns exec "$name-m" tc qdisc add dev mb root tbf rate "$rate" \
			burst 32kbit latency 50ms
	fi
}

hub_up() {
	mkns "$name-a"
	ip -n "$name-a" link add br0 type bridge
	for x in a b c; do
		ip -n "$name-a" link add "v$x" type veth peer name "p$x"
		ip -n "$name-a" link set "p$x" mtu "$mtu" master br0 up
	done
	ip -n "$name-a" link set br0 up
	ip -n "$name-a" link set vb address 02:00:00:00:00:0b mtu "$mtu" up
	ip -n "$name-a" link set vc address 02:00:00:00:00:0c mtu "$mtu" up
}

finish_up() {
	ip -n "$name-a" link set va address 02:00:00:00:00:0a mtu "$mtu" up
	[ "$kind" = hub ] && return
	ip -n "$name-b" link set vb address 02:00:00:00:00:0b mtu "$mtu" up
	if [ "$kind" = bridge ]; then
		ip -n "$name-m" link set dev ma mtu "$mtu"
		ip -n "$name-m" link set dev mb mtu "$mtu"
	fi
}

case $kind/$op in
veth/up|bridge/up|hub/up)
	trap down EXIT
	"${kind}_up"
	finish_up
	trap - EXIT
	;;
veth/down|bridge/down|hub/down)
	down
	;;
*)
	usage
	;;
esac
