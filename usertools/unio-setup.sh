#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's first command: installs what is missing, builds Unio in ./build, and runs the
# main job: unio-perf between two processes over the default transport (shared memory),
# server on core 0, client on core 1, tag latency then tag bandwidth.
#
#   usertools/unio-setup.sh [unio-perf options...]   (default: -t tag_lat -s 8 -n 100000)
set -eu
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
run_pair() {
	echo "+ $perf -l $c0 -- $* -p $port        (server)"
	echo "+ $perf -l $c1 -- $* -p $port 127.0.0.1  (client)"
	$perf -l $c0 -- "$@" -p $port -f >/dev/null &
	srv=$!
	sleep 0.5
	$perf -l $c1 -- "$@" -p $port 127.0.0.1
	wait $srv
	port=$((port + 1))
}
if [ $# -gt 0 ]; then
	run_pair "$@"
else
	run_pair -t tag_lat -s 8 -n 100000
	run_pair -t tag_bw -s 8,65536,1048576 -n 2000
fi
