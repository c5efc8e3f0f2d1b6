#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Cross-builds Unio for aarch64 (BlueField DPUs) on an x86-64 Debian 12 host and, with
# --test, runs its tests under qemu-user.  Installs what is missing (gcc-aarch64-linux-gnu,
# qemu-user-static), makes a sysroot of Debian's arm64 DPDK and C library packages (fetched
# with a private apt state under BUILDDIR: dpkg gets no arm64 architecture, nothing arm64 is
# installed), kept and reused while its package list is unchanged, then configures and
# builds BUILDDIR/build with config/arm64_MACHINE_linux_gcc.
#
#   usertools/unio-cross-arm64.sh [-b BUILDDIR] [-m MACHINE] [--test [NAME...]]
#
#   -b BUILDDIR  where the sysroot and the build go (default build-arm64)
#   -m MACHINE   bluefield (BlueField-2, Cortex-A72, the default), bluefield3 (Cortex-A78)
#                or armv8 (any Armv8-A)
#   --test [NAME...]  then run these tests under qemu-user; by default the fast suite but
#                for the tests qemu-user cannot pass (listed in step 4 of this script),
#                plus the mp suite's two-process shm unio-perf runs.  Registers qemu's
#                binfmt_misc handler for aarch64 while they run (tests fork and exec the
#                aarch64 binaries) and removes it again if it was not there before.  Needs
#                root.  The results are in BUILDDIR/build/meson-logs/testlog.json.
# qemu-user on x86 does not reproduce Arm's weak memory ordering: see
# doc/guides/cross-arm64.md.
set -u
usage() {
	sed -n '3,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
	exit "$1"
}
cd "$(dirname "$0")/.." || exit 1
top=$PWD
bdir=build-arm64
machine=bluefield
test=0
while [ $# -gt 0 ]; do
	case $1 in
	-b) bdir=${2:?}; shift 2 ;;
	-m) machine=${2:?}; shift 2 ;;
	--test) test=1; shift; break ;;
	-h|--help) usage 0 ;;
	*) echo "unio-cross-arm64: unknown argument: $1" >&2; usage 2 >&2 ;;
	esac
done
cross=$top/config/arm64_${machine}_linux_gcc
[ -f "$cross" ] || { echo "unio-cross-arm64: no cross file $cross" >&2; exit 2; }
mkdir -p "$bdir" && bdir=$(cd "$bdir" && pwd) || exit 1
sysroot=$bdir/sysroot
say() { echo "unio-cross-arm64: $*"; }

# 1. the host tools
missing=()
for t in aarch64-linux-gnu-gcc:gcc-aarch64-linux-gnu qemu-aarch64-static:qemu-user-static \
		meson:meson ninja:ninja-build pkg-config:pkg-config dpkg-deb:dpkg; do
	command -v "${t%%:*}" >/dev/null || missing+=("${t#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
	say "installing ${missing[*]}"
	apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
		"${missing[@]}" >/dev/null || { say "apt-get install failed"; exit 1; }
fi

# 2. the sysroot: Debian's arm64 DPDK 22.11 (headers, the libraries Unio links, the PMDs its
# tests load as EAL plugins and their dependencies) and the C library qemu runs them with.
# No net_tap: it needs librte_gso, and EAL refuses to start when a plugin does not load.
pkgs="libdpdk-dev libc6 libgcc-s1 libbsd0 libbsd-dev libmd0 libmd-dev libfdt1 libnuma1"
for p in eal kvargs telemetry ring mempool mempool-ring mbuf net ethdev meter pci bus-pci \
		bus-vdev hash rcu net-memif net-af-packet net-ring net-null; do
	pkgs="$pkgs librte-${p}23"
done
if [ "$(cat "$sysroot/.unio-packages" 2>/dev/null)" != "$pkgs" ]; then
	say "making the sysroot in $sysroot"
	apt=$bdir/apt
	rm -rf "$sysroot" "$apt"
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/debs" "$sysroot"
	aopt=(-o APT::Architectures::=amd64 -o APT::Architectures::=arm64
		-o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache"
		-o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root)
	(apt-get "${aopt[@]}" -qq update &&
	 cd "$apt/debs" && apt-get "${aopt[@]}" -qq download $(printf '%s:arm64 ' $pkgs)) ||
		{ say "fetching the arm64 packages failed"; exit 1; }
	for d in "$apt"/debs/*.deb; do
		dpkg-deb -x "$d" "$sysroot" || exit 1
	done
	rm -rf "$apt"
	# libbsd.so is a linker script naming /usr/lib/...: point it at the library itself
	ln -sf libbsd.so.0 "$sysroot/usr/lib/aarch64-linux-gnu/libbsd.so"
	echo "$pkgs" >"$sysroot/.unio-packages"
fi
printf '# made by usertools/unio-cross-arm64.sh\n[constants]\nsysroot = %s\n' \
	"'$sysroot'" >"$bdir/sysroot.ini"

# 3. configure (again for another MACHINE) and build
if [ "$(cat "$bdir/build/.unio-machine" 2>/dev/null)" != "$machine" ]; then
	rm -rf "$bdir/build"
	meson setup "$bdir/build" --cross-file "$bdir/sysroot.ini" --cross-file "$cross" \
		-Dwerror=true >"$bdir/setup.log" 2>&1 ||
		{ tail -n 40 "$bdir/setup.log"; say "meson setup failed"; exit 1; }
	echo "$machine" >"$bdir/build/.unio-machine"
fi
ninja -C "$bdir/build" >"$bdir/build.log" 2>&1 ||
	{ grep -B2 -A12 -m3 -E "error|FAILED" "$bdir/build.log"; say "build failed"; exit 1; }
say "built in $bdir/build: libunio.so for $(aarch64-linux-gnu-readelf -h \
	"$bdir/build/libunio.so" | sed -n 's/^ *Machine: *//p')"
[ $test = 1 ] || exit 0

# 4. the tests under qemu-user.  Tests fork and exec the aarch64 binaries, which needs the
# kernel's binfmt_misc to hand them to qemu (QEMU_LD_PREFIX: the sysroot).  Unio's hugepage
# probe fails under qemu-user (UNIO_HUGEPAGES=no: EAL runs with --no-huge, no warning).
# Not run (each fails only for qemu-user's sake, and runs in the x86 suites):
#   qemu-user has no process_vm_readv (ENOSYS), so shm has no CMA and no put/get zero-copy
#   (a new fast test that needs them belongs here, or the CI's aarch64 step fails):
cma_tests="am_rndv_split rma_host_sizes rma_fence_order rma_key_bounds
	rma_stale_keys api_close_answer_delivered api_flush_blocking api_proto_fuzz
	api_rndv_auto_measure api_rndv_auto_measure_am api_rndv_auto_forced api_rndv_auto_cpu
	api_rndv_measure_transition api_rndv_env_honoured"
#   the hugepage probe fails under qemu-user (above), so allocations are on 4 kB pages:
huge_tests="rma_alloc_hugepages"
#   not a test of the aarch64 build (the tree's habits; a program built by the host's cc
#   against the installed library), checked by the x86 suites:
native_tests="devtools_check install_pkgconfig"
# The mp suite's two-process shm unio-perf runs, their payloads validated (-V):
perf_tests="perf_tag_lat_two_procs perf_tag_sync_lat_sweep_two_procs perf_loopback"
if [ $# -eq 0 ]; then
	set -- $(meson test -C "$bdir/build" --list --suite fast 2>/dev/null |
		sed -n 's|^unio:fast / ||p' |
		grep -vxF -f <(printf '%s\n' $cma_tests $huge_tests $native_tests))
	[ $# -gt 100 ] || { say "could not list the fast suite"; exit 1; }
	set -- "$@" $perf_tests
fi
bfm=/proc/sys/fs/binfmt_misc
mounted=0 registered=0
cleanup() {
	[ $registered = 1 ] && echo -1 >$bfm/qemu-aarch64
	[ $mounted = 1 ] && umount $bfm
}
trap cleanup EXIT
if [ ! -e $bfm/register ]; then
	mount -t binfmt_misc binfmt_misc $bfm && mounted=1
fi
if [ ! -e $bfm/qemu-aarch64 ] && [ -e $bfm/register ]; then
	grep -v '^#' /usr/lib/binfmt.d/qemu-aarch64.conf >$bfm/register && registered=1
fi
[ -e $bfm/qemu-aarch64 ] || say "no binfmt_misc handler: the multi-process tests will fail"
say "running $# tests under qemu-user"
QEMU_LD_PREFIX=$sysroot UNIO_HUGEPAGES=no meson test -C "$bdir/build" --num-processes 2 \
	--print-errorlogs "$@"
