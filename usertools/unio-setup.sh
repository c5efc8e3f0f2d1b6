#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's first command: installs what is missing, builds Unio in ./build, and runs the
# main job: unio-perf between two processes over the default transport (shared memory),
# server on core 0, client on core 1, tag latency then tag bandwidth.
#
#   usertools/unio-setup.sh [unio-perf options...]
#
# Without options: -t tag_lat -s 8 -n 100000, then -t tag_bw -s 8,65536,1048576 -n 2000.
# Exits with the first failing run's status (the client's, or else the server's).
set -eu
usage() {
	sed -n '3,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
	exit "$1"
}
case ${1:-} in
-h|--help) usage 0 ;;
esac
cd "$(dirname "$0")/.."
usertools/unio-deps.sh
usertools/unio-hugepages.sh 256 || true
[ -f build/build.ninja ] || meson setup build
ninja -C build

perf=build/app/perf/unio-perf
ncpu=$(nproc)
c0=0
c1=$((ncpu > 1 ? 1 : 0))
port=$((20000 + RANDOM % 20000))
srv=""
log=$(mktemp)
trap 'rm -f "$log"; [ -z "$srv" ] || kill "$srv" 2>/dev/null || true' EXIT
run_pair() {
	local rc=0 src=0

	echo "+ $perf -l $c0 -- $* -p $port -f        (server)"
	echo "+ $perf -l $c1 -- $* -p $port 127.0.0.1  (client)"
	$perf -l $c0 -- "$@" -p $port -f >"$log" &
	srv=$!
	# the client does not retry: start it once the server listens (or has failed)
	for _ in $(seq 200); do
		grep -q "waiting for a connection" "$log" && break
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.05
	done
	$perf -l $c1 -- "$@" -p $port 127.0.0.1 || rc=$?
	[ $rc -eq 0 ] || kill -INT "$srv" 2>/dev/null || true
	wait "$srv" || src=$?
	srv=""
	port=$((port + 1))
	[ $rc -ne 0 ] || rc=$src
	[ $rc -eq 0 ] || exit $rc
}
if [ $# -gt 0 ]; then
	run_pair "$@"
else
	run_pair -t tag_lat -s 8 -n 100000
	run_pair -t tag_bw -s 8,65536,1048576 -n 2000
fi
