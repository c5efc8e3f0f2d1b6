#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Regenerate doc/performance.md and its plots: builds Unio when needed, runs
# usertools/unio-compare.py for shm and tcp, and for active messages and put / get over shm
# (Unio and UCX interleaved, server on CPU 0, client on CPU 1), and writes the page.  Takes
# about 6 minutes on a 2-core machine.
#
#   usertools/unio-perf-report.sh [BUILD_DIR]      (default: build)
set -eu
usage() {
	sed -n '3,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
	exit "$1"
}
case $#:${1:-} in
0:|1:[!-]*) ;;
1:-h|1:--help) usage 0 ;;
*) echo "unio-perf-report: unknown arguments: $*" >&2; usage 2 >&2 ;;
esac
cd "$(dirname "$0")/.."
build=${1:-build}
[ -f "$build/build.ninja" ] || meson setup "$build"
ninja -C "$build" >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
commit=$(git rev-parse --short HEAD)
# measure a private copy, so that a rebuild during the run cannot swap the library
mkdir -p "$tmp/snap/app/perf"
cp -a "$build"/libunio.so* "$tmp/snap/"
cp "$build/app/perf/unio-perf" "$tmp/snap/app/perf/"

usertools/unio-compare.py --build "$tmp/snap" --tls shm --runs 5 --lat-runs 9 --iters 20000 \
	--png doc/img/perf-shm.png --markdown "$tmp/shm.md" | tee "$tmp/shm.txt"
usertools/unio-compare.py --build "$tmp/snap" --tls tcp --runs 5 --lat-runs 9 --iters 20000 \
	--sizes 8,512,4k,64k,1m --png doc/img/perf-tcp.png --markdown "$tmp/tcp.md" | tee "$tmp/tcp.txt"
usertools/unio-compare.py --build "$tmp/snap" --tls shm --runs 3 --lat-runs 7 --iters 20000 \
	--test am_lat,am_bw,put_lat,put_bw,get_bw --sizes 8,64k,1m --markdown "$tmp/amrma.md" |
	tee "$tmp/amrma.txt"

{
	sed -n '1,/^<!-- results -->$/p' doc/performance.md
	echo
	echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC') at commit $commit (load average" \
		"$(cut -d' ' -f2 /proc/loadavg) over the last 5 minutes, $(nproc) CPUs)."
	echo
	echo "### Shared memory"
	echo
	cat "$tmp/shm.md"
	echo
	echo "![shm: latency and bandwidth against message size](img/perf-shm.png)"
	echo
	echo "### TCP"
	echo
	cat "$tmp/tcp.md"
	echo
	echo "![tcp: latency and bandwidth against message size](img/perf-tcp.png)"
	echo
	echo "### Active messages and put / get over shared memory"
	echo
	echo "ucx_perftest \`ucp_am_lat\`, \`ucp_am_bw\`, \`ucp_put_lat\`, \`ucp_put_bw\`," \
		"\`ucp_get\` against unio-perf \`am_lat\`, \`am_bw\`, \`put_lat\`, \`put_bw\`," \
		"\`get_bw\`."
	echo
	cat "$tmp/amrma.md"
	echo
	echo "<!-- end of results -->"
	sed -n '/^<!-- end of results -->$/,$p' doc/performance.md | tail -n +2
} >"$tmp/page.md"
cp "$tmp/page.md" doc/performance.md
echo "unio-perf-report: doc/performance.md and doc/img/perf-{shm,tcp}.png updated"
