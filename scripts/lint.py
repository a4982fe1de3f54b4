#!/usr/bin/python3
"""lint: the house rules, as one check `make test` runs (ctest target lint).

1. No banned libc call in C sources (curl's list): gets, strcpy, strcat, sprintf, vsprintf,
   strtok, atoi, atol, sscanf, strerror (sw_strerror, over strerror_r, instead). Comments and
   string literals are ignored.
2. No include that goes up the layers (../shared/design.md, "Layers"): a file in src/<layer>/
   may include headers of its own layer and of the layers listed after it in LAYERS.
3. No clang-format drift: every C file is as clang-format (the repository's .clang-format)
   would write it.

Usage: lint.py [--root DIR] [--no-format]. Prints one line per finding; exits 1 if any.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

BANNED = ["gets", "strcpy", "strcat", "sprintf", "vsprintf", "strtok", "atoi", "atol", "sscanf",
          "strerror"]
# top to bottom; arrows only point down
LAYERS = ["cmd", "controllers", "builder", "apiserver", "kinds", "meta", "client", "registry",
          "image", "store", "util"]
DIRS = ["src", "tests", "fuzz", "bench"]

CALL = re.compile(r"(?<![\w.>])(%s)\s*\(" % "|".join(BANNED))
INCLUDE = re.compile(r'^[ \t]*#[ \t]*include[ \t]+"', re.M)


def strip_comments_and_strings(text):
    """The text with comments, string and character literals blanked (newlines kept)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            if j < n and text[j] == c:
                out.append(c + " " * (j - i - 1) + c)
                i = j + 1
            else:  # unterminated at the end of the line: keep the newline
                out.append(c + " " * (min(j, n) - i - 1))
                i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def c_files(root):
    for d in DIRS:
        for base, dirs, files in os.walk(os.path.join(root, d)):
            dirs[:] = sorted(x for x in dirs if x != "node_modules")  # npm's, not ours
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.join(base, f)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--root", default=os.path.join(os.path.dirname(__file__), ".."))
    p.add_argument("--no-format", action="store_true", help="skip the clang-format check")
    a = p.parse_args()
    root = os.path.abspath(a.root)
    findings = []
    files = list(c_files(root))
    for path in files:
        rel = os.path.relpath(path, root)
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        code = strip_comments_and_strings(text)
        for m in CALL.finditer(code):
            line = code.count("\n", 0, m.start()) + 1
            fix = " (use sw_strerror)" if m.group(1) == "strerror" else ""
            findings.append("%s:%d: banned call %s()%s" % (rel, line, m.group(1), fix))
        parts = rel.split(os.sep)
        if parts[0] == "src" and len(parts) > 2 and parts[1] in LAYERS:
            own = LAYERS.index(parts[1])
            # found where comments are blanked; the path read from the text (a literal)
            for m in INCLUDE.finditer(code):
                path = text[m.end():text.find('"', m.end())]
                target = path.lstrip("./").split("/")[0] if "/" in path else ""
                if target in LAYERS and LAYERS.index(target) < own:
                    line = code.count("\n", 0, m.start()) + 1
                    findings.append("%s:%d: includes %s/ from %s/: up the layers" %
                                    (rel, line, target, parts[1]))
    if not a.no_format:
        cf = shutil.which("clang-format")
        if not cf:
            findings.append("clang-format is not installed (scripts/install-deps installs it)")
        else:
            for path in files:
                r = subprocess.run([cf, "--dry-run", "-Werror", path], cwd=root,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                if r.returncode != 0:
                    findings.append("%s: not as clang-format writes it (run clang-format -i)" %
                                    os.path.relpath(path, root))
    for f in findings:
        print(f)
    print("lint: %d file(s), %d finding(s)" % (len(files), len(findings)))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
