#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# devtools/check.sh: the tree's habits, checked.  Run from anywhere; exit 0 when clean.
#  - every C/header/meson/shell file carries an SPDX line
#  - C sources: lines of at most 100 columns (tabs count 8), no trailing whitespace,
#    indentation with tabs, no space before a tab
#  - every public header compiles on its own (self-contained), with -Wall -Werror
#  - every symbol of the installed headers has a doxygen comment (devtools/doc-check.py)
set -u
cd "$(dirname "$0")/.." || exit 1
rc=0
files=$(git ls-files '*.c' '*.h' 2>/dev/null)
for f in $files $(git ls-files 'meson.build' '*/meson.build' '*.sh' '.ci/run' 2>/dev/null); do
	head -3 "$f" | grep -q "SPDX-License-Identifier" || { echo "$f: no SPDX line"; rc=1; }
done
for f in $files; do
	awk -v f="$f" '
	{ line = $0; w = 0
	  for (i = 1; i <= length(line); i++) { c = substr(line, i, 1); w = (c == "\t") ? w + 8 - w % 8 : w + 1 }
	  if (w > 100) { printf "%s:%d: line longer than 100 columns (%d)\n", f, NR, w; bad = 1 }
	  if (line ~ /[ \t]+$/) { printf "%s:%d: trailing whitespace\n", f, NR; bad = 1 }
	  if (line ~ /^        /) { printf "%s:%d: indented with spaces\n", f, NR; bad = 1 }
	  if (line ~ / \t/) { printf "%s:%d: space before tab\n", f, NR; bad = 1 }
	}
	END { exit bad }' "$f" || rc=1
done
# public headers are self-contained
cflags=$(pkg-config --cflags libdpdk 2>/dev/null)
for h in $(git ls-files 'lib/*/unio*.h'); do
	inc=""
	for d in lib/*/; do inc="$inc -I$d"; done
	# shellcheck disable=SC2086
	echo "#include \"$(basename "$h")\"" | cc -x c -fsyntax-only -Wall -Wextra -Werror \
		$cflags $inc -I build -I build-ci - 2>&1 | sed "s|^|$h: |" | grep . && rc=1
done
# doxygen on every public symbol (issue 4): functions, types, members, values, macros
python3 devtools/doc-check.py || rc=1
[ $rc -eq 0 ] && echo "devtools/check.sh: clean"
exit $rc
