#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# The README's test command (and what .ci/run calls): installs what is missing, reserves
# hugepages when it can, builds with warnings as errors and runs every test suite, builds
# again with ASan+UBSan and runs the fast and multi-process suites, builds with TSan and
# runs the shared-worker thread tests (self and shm), builds a minimal configuration,
# cross-builds for aarch64 and runs its tests under qemu-user (usertools/unio-cross-arm64.sh),
# and ends with the line "N passed, N failed, N skipped".
#
#   usertools/unio-test.sh [--quick]     (--quick: skip the sanitizer, minimal and aarch64
#                                         builds)
set -u
usage() {
	sed -n '3,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
	exit "$1"
}
case $#:${1:-} in
0:|1:--quick) ;;
1:-h|1:--help) usage 0 ;;
*) echo "unio-test: unknown arguments: $*" >&2; usage 2 >&2 ;;
esac
cd "$(dirname "$0")/.." || exit 1
top=$PWD
quick=0
[ "${1:-}" = "--quick" ] && quick=1

usertools/unio-deps.sh || { echo "unio-test: installing packages failed"; echo "0 passed, 1 failed"; exit 1; }
usertools/unio-hugepages.sh 256

pass=0 fail=0 skip=0
results=$(mktemp)
trap 'rm -f "$results"' EXIT

# count the results of one meson test run from its JSON log
count() {
	python3 - "$1/meson-logs/testlog.json" >"$results" <<'PY'
import json, sys
p = f = s = 0
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    if r in ("OK", "EXPECTEDFAIL"):
        p += 1
    elif r == "SKIP":
        s += 1
    else:
        f += 1
print(p, f, s)
PY
	read -r p f s <"$results"
	pass=$((pass + p)); fail=$((fail + f)); skip=$((skip + s))
	echo "unio-test: $2: $p passed, $f failed, $s skipped"
}

# run one build step quietly; on failure show its output and count it
step() {
	local name=$1 log
	shift
	log=$(mktemp)
	echo "unio-test: == $name: $*"
	if ! "$@" >"$log" 2>&1; then
		tail -n 60 "$log"
		echo "unio-test: $name failed"
		rm -f "$log"
		fail=$((fail + 1))
		return 1
	fi
	rm -f "$log"
}

export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1
export LSAN_OPTIONS=suppressions=$top/devtools/lsan.supp:print_suppressions=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1

# 1. release build, warnings are errors, every suite
rm -rf build-ci
if step setup meson setup build-ci -Dwerror=true -Dbuildtype=release &&
   step build ninja -C build-ci; then
	# every suite but "open" (acceptance checks of unmet requirements: app/test/unio_test.h)
	meson test -C build-ci --num-processes 2 --suite fast --suite mp --suite slow \
		--print-errorlogs >build-ci/test.out 2>&1
	grep -E "^ *[0-9]+/[0-9]+ " build-ci/test.out | grep -vE " OK | SKIP " || true
	count build-ci "release build"
fi

if [ $quick -eq 0 ]; then
	# 2. sanitizers: fast and multi-process suites
	rm -rf build-ci-asan
	if step asan-setup meson setup build-ci-asan -Dwerror=true -Db_sanitize=address,undefined \
			-Db_lundef=false -Db_lto=false -Dbuildtype=debugoptimized &&
	   step asan-build ninja -C build-ci-asan; then
		meson test -C build-ci-asan --num-processes 2 --suite fast --suite mp \
			--print-errorlogs >build-ci-asan/test.out 2>&1
		grep -E "^ *[0-9]+/[0-9]+ " build-ci-asan/test.out | grep -vE " OK | SKIP " || true
		count build-ci-asan "ASan+UBSan build"
	fi
	# 3. ThreadSanitizer: workers shared by threads (UNIO_THREAD_MODE_MULTI); a race report
	#    ends the test with exit code 66
	rm -rf build-ci-tsan
	if step tsan-setup meson setup build-ci-tsan -Dwerror=true -Db_sanitize=thread \
			-Db_lto=false -Dbuildtype=debugoptimized -Dexamples=false &&
	   step tsan-build ninja -C build-ci-tsan; then
		TSAN_OPTIONS=halt_on_error=1:exitcode=66 meson test -C build-ci-tsan \
			--num-processes 2 --print-errorlogs api_thread_multi api_thread_multi_shm \
			>build-ci-tsan/test.out 2>&1
		grep -E "^ *[0-9]+/[0-9]+ " build-ci-tsan/test.out | grep -vE " OK | SKIP " || true
		count build-ci-tsan "TSan build"
	fi
	# 4. minimal build: the network drivers disabled (by glob), no tests or examples; the
	#    summary must list them as skipped with the reason
	rm -rf build-ci-min
	if step min-setup meson setup build-ci-min -Dwerror=true -Ddisable_drivers=tl/tcp,tl/eth* \
			-Dtests=false -Dexamples=false &&
	   step min-build ninja -C build-ci-min &&
	   step min-summary grep -qE "tl/(tcp|ethdev) *: disabled by disable_drivers" \
			build-ci-min/meson-logs/meson-log.txt; then
		pass=$((pass + 1))
	fi
	# 5. aarch64 (BlueField-2) cross build; under qemu-user the fast suite but for the tests
	#    qemu cannot pass, and the two-process shm unio-perf runs (doc/guides/cross-arm64.md)
	rm -rf build-ci-arm64
	if step arm64-build usertools/unio-cross-arm64.sh -b build-ci-arm64; then
		usertools/unio-cross-arm64.sh -b build-ci-arm64 --test >build-ci-arm64/test.out 2>&1
		grep -E "^ *[0-9]+/[0-9]+ " build-ci-arm64/test.out | grep -vE " OK | SKIP " || true
		if [ -f build-ci-arm64/build/meson-logs/testlog.json ]; then
			count build-ci-arm64/build "aarch64 build under qemu-user"
		else
			tail -n 20 build-ci-arm64/test.out
			echo "unio-test: the aarch64 tests did not run"
			fail=$((fail + 1))
		fi
	fi
fi

# leftovers are failures too
left=$( (ls -d /var/run/dpdk/unio-* /dev/shm/unio* /var/run/unio-test-netns/* 2>/dev/null;
	ip netns list 2>/dev/null | sed -n 's/^\(unio[^ ]*\).*/netns \1/p') | head -5)
if [ -n "$left" ]; then
	echo "unio-test: left behind by the tests:"; echo "$left"
	fail=$((fail + 1))
fi

echo "$pass passed, $fail failed, $skip skipped"
[ $fail -eq 0 ]
