#!/usr/bin/env python3
"""Example outputs in the docs, produced by running their commands (make docs) and checked (make docs-check).

A generated block is a marker comment, one fenced block, and a closing marker:

    <!-- example: build/vpsim plan configs/default.yaml | head -3 -->
    ```
    $ build/vpsim plan configs/default.yaml | head -3
    ...what the command printed...
    ```
    <!-- /example -->

The command runs under bash from a scratch folder that links the repo's top-level entries (so files a
command writes, `--out steps.csv`, land there and not in the checkout), with stdout captured (add `2>&1`
to the command to show stderr too: the prompt line shows exactly what ran). Two variants:

    <!-- example (timings): CMD -->   the output holds timings: the check compares it with every number
                                       masked, so the shape, the words and the column set must match
    <!-- example (exit N): CMD -->     the command is expected to exit N (a failure shown on purpose);
                                       combined with timings as "(timings, exit 1)"
    <!-- example (measured: DATE, MACHINE): CMD -->
                                       an output only a GPU machine can produce: never run here; the label
                                       is its provenance, and the block stays as written

`--write` rewrites every block from what the commands print now; `--check` (the default) exits 1 listing
every stale block with a diff, so a change that moves an answer must update the docs in the same commit.
"""
import argparse
import difflib
import os
import re
import socket
import subprocess
import sys
import tempfile

OPEN_RE = re.compile(r"^<!-- example(?: \((?P<kind>[^)]*)\))?: (?P<cmd>.+?) -->\s*$")
KIND_RE = re.compile(r"^(timings|exit \d+|measured: .+)$")
CLOSE = "<!-- /example -->"
NUMBER_RE = re.compile(r"[-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
TIMEOUT_S = 120


class DocError(Exception):
    pass


def parse_blocks(path, text):
    """The example blocks of one file: (first line index, last line index, kind, command, body lines)."""
    lines = text.split("\n")
    blocks = []
    i = 0
    while i < len(lines):
        m = OPEN_RE.match(lines[i])
        if not m:
            if lines[i].startswith("<!-- example"):
                raise DocError(f"{path}:{i + 1}: a marker that does not parse: {lines[i]!r} "
                               "(expected '<!-- example: CMD -->', '(timings)' or '(measured: DATE, MACHINE)')")
            i += 1
            continue
        start = i
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            raise DocError(f"{path}:{i + 2}: an example marker must be followed by a fenced block")
        j = i + 2
        while j < len(lines) and lines[j] != "```":
            j += 1
        if j >= len(lines):
            raise DocError(f"{path}:{i + 2}: the example's fenced block is not closed")
        if j + 1 >= len(lines) or lines[j + 1].strip() != CLOSE:
            raise DocError(f"{path}:{j + 2}: an example block must end with '{CLOSE}'")
        kind = m.group("kind") or "exact"
        flags = [kind] if kind.startswith("measured") else [k.strip() for k in kind.split(",")]
        if kind != "exact" and not all(KIND_RE.match(k) for k in flags):
            raise DocError(f"{path}:{i + 1}: unknown example kind '{kind}' (timings, exit N, measured: DATE, MACHINE)")
        blocks.append((start, j + 1, kind, m.group("cmd"), lines[i + 2:j]))
        i = j + 2
    return lines, blocks


def scratch_dir(root):
    d = tempfile.mkdtemp(prefix="vpsim-docs-")
    for name in os.listdir(root):
        if name.startswith(".") or name == "README.md":
            continue
        os.symlink(os.path.join(root, name), os.path.join(d, name))
    return d


def expected_exit(kind):
    m = re.search(r"exit (\d+)", kind)
    return int(m.group(1)) if m else 0


def run_command(cmd, root, where, want_rc=0):
    env = dict(os.environ, LC_ALL="C", TZ="UTC", COLUMNS="120", VPSIM_ROOT=root)
    env.pop("NCCL_DEBUG", None)
    d = scratch_dir(root)
    try:
        p = subprocess.run(["bash", "-o", "pipefail", "-c", cmd], cwd=d, env=env, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=TIMEOUT_S, text=True)
    except subprocess.TimeoutExpired:
        raise DocError(f"{where}: '{cmd}' ran past {TIMEOUT_S} s")
    finally:
        subprocess.run(["rm", "-rf", d], check=False)
    if p.returncode != want_rc:
        raise DocError(f"{where}: '{cmd}' exited {p.returncode} (expected {want_rc}):\n{p.stderr.strip()[-2000:]}")
    # The machine's name is not part of an example: every host reads "host".
    out = p.stdout.rstrip("\n").replace("@" + socket.gethostname(), "@host")
    # Trailing blanks are invisible in Markdown and editors strip them: not part of what is compared.
    return ["$ " + cmd] + [ln.rstrip() for ln in out.split("\n")]


def mask(lines):
    """Timings vary run to run: every number masked, and the blanks that pad them to a column width."""
    return [re.sub(r" +", " ", NUMBER_RE.sub("#", ln)) for ln in lines]


def process(path, root, write):
    """Returns the list of stale-block messages (empty when the file is current)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    lines, blocks = parse_blocks(path, text)
    stale = []
    out = list(lines)
    # Back to front, so that earlier line numbers stay valid while blocks change length.
    for start, end, kind, cmd, body in reversed(blocks):
        where = f"{path}:{start + 1}"
        if kind.startswith("measured"):
            if not body or not body[0].startswith("$ "):
                stale.append(f"{where}: a measured example must start with its '$ command' line")
            continue
        new = run_command(cmd, root, where, expected_exit(kind))
        same = mask(new) == mask(body) if "timings" in kind else new == body
        if same:
            continue
        if write:
            out[start + 2:end - 1] = new
        else:
            diff = "\n".join(difflib.unified_diff(body, new, "in the docs", "printed now", lineterm="", n=1))
            stale.append(f"{where}: stale example ({kind}): '{cmd}'\n{diff}")
    if write and out != lines:
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write("\n".join(out))
        os.replace(tmp, path)
    return [] if write else stale


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+", help="Markdown files with example blocks")
    ap.add_argument("--write", action="store_true", help="rewrite the blocks (make docs)")
    ap.add_argument("--check", action="store_true", help="fail on a stale block (the default)")
    ap.add_argument("--root", default=os.getcwd(), help="the repo root the commands run against")
    a = ap.parse_args(argv)
    root = os.path.abspath(a.root)
    problems, n = [], 0
    try:
        for f in a.files:
            with open(f, encoding="utf-8") as fh:
                n += len(parse_blocks(f, fh.read())[1])
            problems += process(f, root, a.write)
    except (DocError, OSError) as e:
        print(f"doc_examples: {e}", file=sys.stderr)
        return 2
    if problems:
        for p in problems:
            print(p, file=sys.stderr)
        print(f"doc_examples: {len(problems)} of {n} example block(s) stale: run `make docs` and commit the result",
              file=sys.stderr)
        return 1
    print(f"doc_examples: {n} example block(s) {'written' if a.write else 'current'} in {len(a.files)} file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
