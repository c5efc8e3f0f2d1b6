#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# unio-netns.sh: a test topology for the network drivers: two network namespaces joined by a
# veth pair (doc/guides/drivers/tcp.md, FEASIBILITY.md section 5).
#
#   unio-netns.sh create [NAME]    namespaces NAME-a and NAME-b, veth NAME-va / NAME-vb,
#                                  10.99.0.1/24 in NAME-a, 10.99.0.2/24 in NAME-b, links up
#   unio-netns.sh destroy [NAME]   remove both namespaces (and with them the veth pair)
#   unio-netns.sh status [NAME]    show the links and addresses
#
# NAME defaults to "unio"; interface names are cut to 15 characters.  Needs root.
# Run a program inside with: ip netns exec NAME-a <program>
set -eu

usage() {
	sed -n '3,12p' "$0" | sed 's/^# \{0,1\}//'
	exit "${1:-2}"
}

case ${1:-} in -h|--help) usage 0 ;; esac
[ $# -ge 1 ] || usage
cmd=$1
name=${2:-unio}
ns_a=$name-a
ns_b=$name-b
va=$(printf '%.12s' "$name")-va
vb=$(printf '%.12s' "$name")-vb

wait_carrier() {
	for _ in $(seq 50); do
		if ip -n "$ns_a" link show "$va" | grep -q LOWER_UP &&
		   ip -n "$ns_b" link show "$vb" | grep -q LOWER_UP; then
			return 0
		fi
		sleep 0.1
	done
	echo "unio-netns.sh: the veth pair did not come up" >&2
	return 1
}

create() {
	ip netns add "$ns_a"
	if ! ip netns add "$ns_b"; then
		ip netns del "$ns_a"
		exit 1
	fi
	trap 'destroy' ERR
	ip link add "$va" netns "$ns_a" type veth peer name "$vb" netns "$ns_b"
	ip -n "$ns_a" addr add 10.99.0.1/24 dev "$va"
	ip -n "$ns_b" addr add 10.99.0.2/24 dev "$vb"
	for ns in "$ns_a" "$ns_b"; do
		ip -n "$ns" link set lo up
	done
	ip -n "$ns_a" link set "$va" up
	ip -n "$ns_b" link set "$vb" up
	wait_carrier
	trap - ERR
	echo "$ns_a: $va 10.99.0.1/24  <->  $ns_b: $vb 10.99.0.2/24"
}

destroy() {
	ip netns del "$ns_a" 2>/dev/null || true
	ip netns del "$ns_b" 2>/dev/null || true
}

status() {
	for ns in "$ns_a" "$ns_b"; do
		echo "== $ns"
		ip -n "$ns" -br addr
	done
}

case $cmd in
create) create ;;
destroy) destroy ;;
status) status ;;
*) usage ;;
esac
