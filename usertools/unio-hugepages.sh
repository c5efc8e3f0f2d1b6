#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# unio-hugepages.sh [N]: make sure at least N (default 256) free 2 MiB hugepages are reserved.
# Exits 0 also without the rights or the memory (Unio falls back to --no-huge by itself);
# 2 when N is not a number.
usage() {
	sed -n '3,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
	exit "$1"
}
case ${1:-256} in
-h|--help) usage 0 ;;
*[!0-9]*) echo "unio-hugepages: N must be a number of 2 MiB pages, not '$1'" >&2; usage 2 >&2 ;;
esac
[ $# -le 1 ] || usage 2 >&2
want=${1:-256}
f=/sys/kernel/mm/hugepages/hugepages-2048kB
[ -d $f ] || { echo "unio-hugepages: no 2 MiB hugepage support"; exit 0; }
free=$(cat $f/free_hugepages)
total=$(cat $f/nr_hugepages)
if [ "$free" -lt "$want" ]; then
	echo $((total + want - free)) > $f/nr_hugepages 2>/dev/null ||
		echo "unio-hugepages: cannot reserve hugepages (not root?): using --no-huge"
fi
echo "unio-hugepages: $(cat $f/free_hugepages) free of $(cat $f/nr_hugepages) 2 MiB pages"
exit 0
