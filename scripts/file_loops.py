#!/usr/bin/env python3
"""No two source files call each other: the file-level call graph of sim/, read from the objects.

For each object of sim/ (OBJDIR, default build/obj), `nm` gives the symbols it defines and the ones it
uses; file A uses file B when A uses a symbol B defines. A loop is a pair of files that use each other
(a function-pointer table that names a file's functions counts as use: it is how comm_backends.c
reaches its backends). Prints each loop with the symbols both ways; exits 1 when a loop is found that
ALLOWED does not name, 0 otherwise. Objects whose source is gone (a renamed file's stale .o) are skipped.

usage: scripts/file_loops.py [--objdir build/obj] [--allow FILE] [--root DIR]
ALLOWED (--allow, default scripts/file_loops.allow): lines "a.c b.c  # why", the loops kept on purpose.
"""
import argparse
import collections
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def graph(objdir, root):
    defs, uses = {}, collections.defaultdict(set)
    for dirpath, _, files in os.walk(os.path.join(objdir, "sim")):
        for f in sorted(files):
            if not f.endswith(".o"):
                continue
            obj = os.path.join(dirpath, f)
            src = os.path.relpath(obj, objdir)[:-2] + ".c"
            if not os.path.exists(os.path.join(root, src)):
                continue
            out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
            for line in out.splitlines():
                p = line.split()
                if len(p) == 3 and p[1] in "TDBR":
                    defs[p[2]] = src
                elif len(p) == 2 and p[0] == "U":
                    uses[src].add(p[1])
    edges = collections.defaultdict(lambda: collections.defaultdict(list))
    for f, syms in uses.items():
        for s in sorted(syms):
            if s in defs and defs[s] != f:
                edges[f][defs[s]].append(s)
    return edges


def loops(edges):
    return sorted({tuple(sorted((a, b))) for a in edges for b in edges[a] if a in edges.get(b, {})})


def read_allowed(path):
    allowed = set()
    if not os.path.exists(path):
        return allowed
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            words = line.split("#", 1)[0].split()
            if not words:
                continue
            if len(words) != 2:
                sys.exit(f"{path}:{n}: want two file names and a '# why', got {line.strip()!r}")
            allowed.add(tuple(sorted(words)))
    return allowed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=ROOT, help="the tree whose sim/ sources the objects come from")
    ap.add_argument("--objdir", default=os.path.join(ROOT, "build", "obj"))
    ap.add_argument("--allow", default=os.path.join(ROOT, "scripts", "file_loops.allow"))
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(a.objdir, "sim")):
        sys.exit(f"file_loops: no objects under {a.objdir}/sim (build first: make)")
    edges = graph(a.objdir, a.root)
    allowed = read_allowed(a.allow)
    found = loops(edges)
    bad = [p for p in found if p not in allowed]
    for x, y in found:
        tag = "allowed" if (x, y) in allowed else "LOOP"
        print(f"{tag}: {x} <-> {y}\n  {x} -> {y}: {', '.join(edges[x][y])}\n  {y} -> {x}: {', '.join(edges[y][x])}")
    stale = sorted(allowed - set(found))
    for x, y in stale:
        print(f"file_loops: {a.allow} allows {x} <-> {y}, which is no loop now: drop the line", file=sys.stderr)
    n_files = len({f for f in edges} | {g for f in edges for g in edges[f]})
    print(f"file_loops: {len(found)} loop(s) among {n_files} files, {len(bad)} not allowed")
    return 1 if bad or stale else 0


if __name__ == "__main__":
    sys.exit(main())
