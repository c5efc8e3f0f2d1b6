#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Installs the Debian 12 packages Unio needs to build, test and compare against UCX,
# skipping those already installed.  Needs root (or sudo).
set -eu
usage() {
	sed -n '3,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"
	exit "$1"
}
case $# in
0) ;;
*) case $1 in -h|--help) usage 0 ;; *) usage 2 >&2 ;; esac ;;
esac

PKGS="gcc libc6-dev meson ninja-build pkg-config python3 libdpdk-dev dpdk-dev
      ucx-utils gnuplot-nox iproute2 procps util-linux nftables iputils-ping iputils-arping
      ethtool"

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
if [ -z "$missing" ]; then
	echo "unio-deps: all packages present"
	exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "unio-deps: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086
$SUDO apt-get install -y -q --no-install-recommends $missing
