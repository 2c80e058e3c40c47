#!/usr/bin/env python3
"""The lab: raw outputs of GPU sessions, kept out of the source tree and fetched on demand.

The raw outputs behind bench/NOTES.md (logs, call scripts, JSON of every device call) live on the
branch `lab` of this repository, one folder per session under runs/, and not in the working tree:
a clone stays small, and a figure can still be read back. bench/lab.tsv, in the tree, is the manifest:
for each folder its git tree id (the checksum of every byte in it), files, bytes, the machine that
made it, the vpsim commit it ran where that is recorded, the call script (the command), and `held` —
a commit of the main history whose bench/runs/ still holds it, for a clone without the lab branch.

usage:
  bench/lab.py list                          the manifest, a line per folder
  bench/lab.py get NAME|all [--to DIR]       extract into DIR/NAME (default build/lab), checked against
                                             its tree id; from the lab branch, else the `held` commit
  bench/lab.py put DIR NAME --machine M [--commit SHA] [--command FILE]
                                             add DIR as runs/NAME on the lab branch (the working tree and
                                             index are not touched) and its line to bench/lab.tsv
  bench/lab.py record                        merge the lab branch into the current branch with -s ours
                                             (its tree unchanged), so that a clone of main alone holds
                                             every folder: only main lands, and a lab branch left
                                             unrecorded is lost with the session (2026-12-02's s17 was)
  bench/lab.py verify                        every folder reachable from HEAD and matching its tree id
                                             (a folder marked lost in `held` is named, not failed)
Exit 0; 2 with a one-line reason on bad input (an unknown folder, a checksum that differs, no git).
A user without the branch: `git fetch origin lab:lab` (or `get` falls back to the `held` commit).
"""
import argparse
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BRANCH = "lab"
FIELDS = ("name", "tree", "files", "bytes", "machine", "commit", "command", "held")


class LabError(Exception):
    pass


def git(*args, root, env=None, inp=None):
    r = subprocess.run(["git", "-C", root, *args], capture_output=True, text=True, env=env, input=inp)
    if r.returncode != 0:
        raise LabError(f"git {' '.join(args)}: {r.stderr.strip() or 'failed'}")
    return r.stdout.strip()


def manifest_path(root):
    return os.path.join(root, "bench", "lab.tsv")


def read_manifest(root):
    path, rows = manifest_path(root), []
    if not os.path.exists(path):
        return rows
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            if line.startswith("#") or not line.strip():
                continue
            cells = line.rstrip("\n").split("\t")
            if len(cells) != len(FIELDS):
                raise LabError(f"{path}:{n}: {len(cells)} fields, want {len(FIELDS)} ({', '.join(FIELDS)})")
            rows.append(dict(zip(FIELDS, cells)))
    return rows


def write_manifest(root, rows):
    path = manifest_path(root)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".lab.tsv.")
    with os.fdopen(fd, "w") as fh:
        fh.write("# bench/lab.py's manifest: the raw-output folders on branch `lab` (runs/NAME). "
                 "tree = git tree id (checksum); held = a main commit whose bench/runs/NAME holds it too.\n")
        fh.write("#" + "\t".join(FIELDS) + "\n")
        for r in sorted(rows, key=lambda r: r["name"]):
            fh.write("\t".join(r[f] for f in FIELDS) + "\n")
    os.replace(tmp, path)


def find(rows, name):
    for r in rows:
        if r["name"] == name:
            return r
    raise LabError(f"no folder {name!r} in bench/lab.tsv (bench/lab.py list shows them)")


def tree_of(root, rev, path):
    try:
        return git("rev-parse", "--verify", "--quiet", f"{rev}:{path}", root=root)
    except LabError:
        return None


def count(root, tree):
    files = size = 0
    for line in git("ls-tree", "-r", "-l", tree, root=root).splitlines():
        meta, _ = line.split("\t", 1)
        files += 1
        size += int(meta.split()[3])
    return files, size


LOST = "lost"  # `held` of a folder whose lab commit never reached main: its line stays for the record


def source_of(root, row):
    """The revision and path that hold the folder: the lab branch, else the held commit."""
    if row["held"].startswith(LOST):
        raise LabError(f"{row['name']}: {row['held']}")
    # `held` is a main commit whose bench/runs/ held the folder, or a lab commit main's history records
    # (the merge of `lab` with -s ours: reachable from main without its files in main's tree).
    for rev, path in ((BRANCH, f"runs/{row['name']}"), (row["held"], f"bench/runs/{row['name']}"),
                      (row["held"], f"runs/{row['name']}")):
        if rev != "-" and tree_of(root, rev, path) == row["tree"]:
            return rev, path
    raise LabError(f"{row['name']}: neither branch {BRANCH} nor commit {row['held']} holds tree {row['tree']} "
                   f"(git fetch origin {BRANCH}:{BRANCH})")


def cmd_list(root, _args):
    rows = read_manifest(root)
    for r in rows:
        print(f"{r['name']:32s} {int(r['files']):4d} files {int(r['bytes']) / 1e6:7.2f} MB  {r['machine']}  "
              f"commit {r['commit']}  command {r['command']}")
    print(f"{len(rows)} folder(s); bench/lab.py get NAME fetches one")
    return 0


def cmd_get(root, args):
    rows = read_manifest(root)
    todo = rows if args.name == "all" else [find(rows, args.name)]
    dest = os.path.abspath(args.to or os.path.join(root, "build", "lab"))
    for r in todo:
        rev, path = source_of(root, r)
        out = os.path.join(dest, r["name"])
        os.makedirs(out, exist_ok=True)
        archive = subprocess.run(["git", "-C", root, "archive", "--format=tar", f"{rev}:{path}"],
                                 capture_output=True, check=False)
        if archive.returncode != 0:
            raise LabError(f"git archive {rev}:{path}: {archive.stderr.decode().strip()}")
        subprocess.run(["tar", "-x", "-C", out], input=archive.stdout, check=True)
        print(f"{r['name']}: {r['files']} files -> {out} (from {rev}, tree {r['tree'][:12]} checked)")
    return 0


def reachable(root, rev):
    """Whether `rev` is in HEAD's history (a clone of the branch holds it)."""
    return subprocess.run(["git", "-C", root, "merge-base", "--is-ancestor", rev, "HEAD"],
                          capture_output=True, check=False).returncode == 0


def cmd_verify(root, _args):
    rows = read_manifest(root)
    lost = [r for r in rows if r["held"].startswith(LOST)]
    for r in rows:
        if r in lost:
            print(f"{r['name']}: {r['held']}")
            continue
        if r["held"] == "-" or not reachable(root, r["held"]):
            raise LabError(f"{r['name']}: its commit {r['held']} is not in HEAD's history, so a clone of this "
                           f"branch would not hold it: run bench/lab.py record")
        rev, _ = source_of(root, r)
        files, size = count(root, r["tree"])
        if (str(files), str(size)) != (r["files"], r["bytes"]):
            raise LabError(f"{r['name']}: tree {r['tree'][:12]} has {files} files, {size} bytes; "
                           f"the manifest says {r['files']}, {r['bytes']}")
        print(f"{r['name']}: ok ({rev})")
    print(f"lab: {len(rows) - len(lost)} folder(s) verified" + (f", {len(lost)} lost" if lost else ""))
    return 0


def cmd_record(root, _args):
    if not tree_of(root, BRANCH, ""):
        raise LabError(f"no branch {BRANCH}: nothing to record")
    if reachable(root, BRANCH):
        print(f"lab: {BRANCH} is already in HEAD's history")
        return 0
    if subprocess.run(["git", "-C", root, "diff", "--cached", "--quiet"], check=False).returncode != 0:
        raise LabError("the index has staged changes: commit them first (record makes a merge commit)")
    git("merge", "-q", "-s", "ours", "--allow-unrelated-histories", "--no-edit", "-m",
        "Record the lab branch in main's history (-s ours: the tree unchanged)", BRANCH, root=root)
    print(f"lab: {BRANCH} recorded in HEAD's history as {git('rev-parse', '--short=12', 'HEAD', root=root)}")
    return 0


def cmd_put(root, args):
    if not os.path.isdir(args.dir):
        raise LabError(f"{args.dir}: no such folder")
    rows = read_manifest(root)
    if any(r["name"] == args.name for r in rows):
        raise LabError(f"{args.name}: already in bench/lab.tsv (folders are kept as made; pick a new name)")
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, GIT_INDEX_FILE=os.path.join(tmp, "index"))
        parent = tree_of(root, BRANCH, "") and git("rev-parse", BRANCH, root=root)
        if parent:
            git("read-tree", BRANCH, root=root, env=env)
        # The folder's files into a scratch index under runs/NAME, never the user's own index.
        adir = os.path.abspath(args.dir)
        for dirpath, _, files in os.walk(adir):
            for f in sorted(files):
                full = os.path.join(dirpath, f)
                blob = git("hash-object", "-w", full, root=root)
                rel = os.path.relpath(full, adir).replace(os.sep, "/")
                git("update-index", "--add", "--cacheinfo", f"100644,{blob},runs/{args.name}/{rel}", root=root, env=env)
        tree = git("write-tree", root=root, env=env)
        msg = f"lab: runs/{args.name} ({args.machine})"
        commit = git("commit-tree", tree, *(["-p", parent] if parent else []), "-m", msg, root=root)
        git("update-ref", f"refs/heads/{BRANCH}", commit, root=root)
    sub = tree_of(root, BRANCH, f"runs/{args.name}")
    files, size = count(root, sub)
    rows.append({"name": args.name, "tree": sub, "files": str(files), "bytes": str(size), "machine": args.machine,
                 "commit": args.commit or "-", "command": args.command or "-", "held": commit[:12]})
    write_manifest(root, rows)
    print(f"lab: runs/{args.name} ({files} files, {size} bytes) on branch {BRANCH} as {commit[:12]}; "
          f"bench/lab.tsv has its line (commit it, then bench/lab.py record)")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--root", default=ROOT, help=argparse.SUPPRESS)
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list")
    g = sub.add_parser("get")
    g.add_argument("name")
    g.add_argument("--to")
    sub.add_parser("verify")
    sub.add_parser("record")
    p = sub.add_parser("put")
    p.add_argument("dir")
    p.add_argument("name")
    p.add_argument("--machine", required=True)
    p.add_argument("--commit")
    p.add_argument("--command")
    args = ap.parse_args(argv)
    try:
        return {"list": cmd_list, "get": cmd_get, "verify": cmd_verify, "put": cmd_put,
                "record": cmd_record}[args.cmd](args.root, args)
    except LabError as e:
        print(f"lab: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
