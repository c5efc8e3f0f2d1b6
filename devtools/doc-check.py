#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""devtools/doc-check.py: every symbol of the installed (public) headers carries a doxygen
comment: functions, typedefs, structs, unions and enums, their members and values, and
macros (not the include guard).  A declaration is documented by a /** ... */ block before
it (blank lines between allowed; a @name / @file / @{ block does not count) or by a /**<
comment on one of its lines.  Prints FILE:LINE: what for each one that is not; exit 1 then.

    devtools/doc-check.py [HEADER...]     (default: the headers lib/*/meson.build installs)
"""
import glob
import os
import re
import sys

GROUP = re.compile(r"@(name|file|\{|\}|defgroup|addtogroup)\b")


def installed_headers(top):
    out = []
    for mb in sorted(glob.glob(os.path.join(top, "lib", "*", "meson.build"))):
        text = open(mb).read()
        m = re.search(r"^headers\s*=\s*files\(([^)]*)\)", text, re.M)
        if m:
            for name in re.findall(r"'([^']+)'", m.group(1)):
                out.append(os.path.join(os.path.dirname(mb), name))
    return out


def check(path):
    bad = []
    lines = open(path).read().split("\n")
    doc = False           # a /** block documents the next declaration
    in_comment = False
    comment_is_doc = False
    decl = None           # (first line number, text so far, documented) of an open declaration
    depth = 0             # inside struct / enum / union braces
    guard = None
    macro_cont = False
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if in_comment:
            if "*/" in line:
                in_comment = False
                doc = comment_is_doc
            elif GROUP.search(line):
                comment_is_doc = False
            continue
        if macro_cont:
            macro_cont = line.endswith("\\")
            continue
        if not line:
            continue
        if line.startswith("/*") and not line.startswith("/**<"):
            is_doc = line.startswith("/**") and not GROUP.search(line)
            if "*/" not in line:
                in_comment, comment_is_doc = True, is_doc
                continue
            else:
                rest = line[line.index("*/") + 2:].strip()
                if rest:       # a comment, then code on the same line
                    line = rest
                else:
                    doc = is_doc
                    continue
        if line.startswith("#"):
            m = re.match(r"#\s*ifndef\s+(\w+)", line)
            if m and guard is None:
                guard = m.group(1)
            m = re.match(r"#\s*define\s+(\w+)", line)
            if m and m.group(1) != guard and not m.group(1).startswith("_") and \
                    not doc and "/**<" not in line:
                bad.append("%s:%d: macro %s has no doxygen comment" % (path, no, m.group(1)))
            macro_cont = line.endswith("\\")
            doc = False
            continue
        if line.startswith("extern \"C\"") or (line in ("}", "};") and depth == 0):
            doc = False
            continue
        code = re.sub(r"/\*.*?\*/", "", line).strip()
        if decl is None:
            if code in ("{",):
                continue
            if code.startswith("}"):
                depth = max(0, depth - 1)
                # "} name;" of a typedef'd struct: documented by the struct's comment
                doc = False
                continue
            decl = (no, code, doc or "/**<" in line)
        else:
            decl = (decl[0], decl[1] + " " + code, decl[2] or "/**<" in line)
        doc = False
        text = decl[1]
        balanced = text.count("(") == text.count(")")
        if text.endswith("{"):
            depth += 1
        elif not balanced or not (text.endswith(";") or
                                  (depth > 0 and text.endswith(",")) or
                                  (depth > 0 and re.match(r"^\w+(\s*=\s*[^,]+)?$", text))):
            continue       # the declaration goes on on the next line
        if not decl[2]:
            m = re.search(r"\(\s*\*\s*(\w+)\s*\)", text) or \
                re.search(r"(\w+)\s*\(", text) or \
                re.search(r"(?:struct|enum|union)\s+(\w+)\s*\{", text) or \
                re.search(r"(\w+)\s*(?:\[[^]]*\])?\s*(?:=[^,;]*)?[;,]?\s*\{?$", text)
            what = m.group(1) if m else text
            kind = "member" if depth > 0 and not text.endswith("{") else "declaration"
            bad.append("%s:%d: %s %s has no doxygen comment" % (path, decl[0], kind, what))
        decl = None
    return bad


def main():
    top = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    headers = sys.argv[1:] or installed_headers(top)
    if not headers:
        print("doc-check: no public header found")
        return 1
    bad = []
    for h in headers:
        bad += check(h)
    for b in bad:
        print(os.path.relpath(b, top) if os.path.isabs(b) else b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
