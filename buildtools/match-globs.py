#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""match-globs.py NAME PATTERNS: exit 0 when NAME matches one of the comma-separated
shell globs in PATTERNS (a pattern without '/' also matches the driver's base name)."""
import fnmatch
import sys

name, patterns = sys.argv[1], sys.argv[2]
base = name.rsplit('/', 1)[-1]
for p in filter(None, (x.strip() for x in patterns.split(','))):
    if fnmatch.fnmatch(name, p) or ('/' not in p and fnmatch.fnmatch(base, p)):
        sys.exit(0)
sys.exit(1)
