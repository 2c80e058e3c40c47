"""bench/lab.py keeps raw outputs on the branch `lab`, out of the working tree: put, list, get and verify
in a scratch repository, the checksum holding, the fallback to the main history, and the refusals."""
import os
import shutil
import subprocess
import sys

from scripts_paths import REPO

LAB = os.path.join(REPO, "bench", "lab.py")


def sh(*args, cwd):
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, check=True).stdout


# A CI machine has no git identity: the lab's commits get one here.
ENV = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")


def lab(root, *args):
    return subprocess.run([sys.executable, LAB, "--root", str(root), *args], capture_output=True, text=True, env=ENV)


def repo(tmp_path):
    root = tmp_path / "repo"
    (root / "bench").mkdir(parents=True)
    (root / "README").write_text("x\n")
    sh("git", "init", "-q", cwd=root)
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "init", cwd=root)
    data = tmp_path / "data"
    (data / "logs").mkdir(parents=True)
    (data / "gpu.txt").write_text("162 passed\n")
    (data / "logs" / "run.json").write_text('{"cycle_ms": 6.74}\n')
    return root, data


def test_put_then_get_gives_back_every_byte_and_leaves_the_tree_alone(tmp_path):
    root, data = repo(tmp_path)
    r = lab(root, "put", str(data), "2026-12-02-h200-x", "--machine", "nvidia-h200", "--command", "call.sh")
    assert r.returncode == 0, r.stderr
    assert sh("git", "status", "--porcelain", "--untracked-files=no", cwd=root) == ""  # index untouched
    assert "runs/2026-12-02-h200-x/logs/run.json" in sh("git", "ls-tree", "-r", "--name-only", "lab", cwd=root)
    rows = [l for l in (root / "bench" / "lab.tsv").read_text().splitlines() if not l.startswith("#")]
    assert len(rows) == 1 and rows[0].split("\t")[2:5] == ["2", str(11 + 19), "nvidia-h200"]
    out = tmp_path / "out"
    r = lab(root, "get", "2026-12-02-h200-x", "--to", str(out))
    assert r.returncode == 0, r.stderr
    assert (out / "2026-12-02-h200-x" / "logs" / "run.json").read_text() == '{"cycle_ms": 6.74}\n'
    assert "2026-12-02-h200-x" in lab(root, "list").stdout


def test_verify_wants_the_lab_recorded_in_the_branch_and_record_merges_it_without_files(tmp_path):
    # Only main lands: a lab commit outside its history is lost with the session.
    root, data = repo(tmp_path)
    assert lab(root, "put", str(data), "s1", "--machine", "m").returncode == 0
    sh("git", "add", "bench/lab.tsv", cwd=root)
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "manifest", cwd=root)
    before = lab(root, "verify")
    assert before.returncode == 2 and "not in HEAD's history" in before.stderr and "bench/lab.py record" in before.stderr
    tree = sh("git", "rev-parse", "HEAD^{tree}", cwd=root)
    r = lab(root, "record")
    assert r.returncode == 0, r.stderr
    assert sh("git", "rev-parse", "HEAD^{tree}", cwd=root) == tree  # -s ours: main's files unchanged
    assert lab(root, "verify").returncode == 0
    assert "already" in lab(root, "record").stdout
    sh("git", "branch", "-D", "lab", cwd=root)  # a clone of main alone
    got = lab(root, "get", "s1", "--to", str(tmp_path / "o"))
    assert got.returncode == 0, got.stderr
    assert (tmp_path / "o" / "s1" / "gpu.txt").read_text() == "162 passed\n"
    # A folder marked lost is named by verify and refused by get, with the reason.
    path = root / "bench" / "lab.tsv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(l[: l.rindex("\t") + 1] + "lost (never recorded)" if l.startswith("s1\t") else l
                              for l in lines) + "\n")
    v = lab(root, "verify")
    assert v.returncode == 0 and "s1: lost (never recorded)" in v.stdout and "1 lost" in v.stdout
    g = lab(root, "get", "s1", "--to", str(tmp_path / "o2"))
    assert g.returncode == 2 and "lost" in g.stderr


def test_a_changed_checksum_an_unknown_folder_and_a_second_put_are_refused(tmp_path):
    root, data = repo(tmp_path)
    assert lab(root, "put", str(data), "s1", "--machine", "m").returncode == 0
    again = lab(root, "put", str(data), "s1", "--machine", "m")
    assert again.returncode == 2 and "already" in again.stderr
    unknown = lab(root, "get", "s2")
    assert unknown.returncode == 2 and "no folder 's2'" in unknown.stderr
    path = root / "bench" / "lab.tsv"
    text = path.read_text()
    tree = [l for l in text.splitlines() if l.startswith("s1\t")][0].split("\t")[1]
    path.write_text(text.replace(tree, "0" * 40))
    bad = lab(root, "get", "s1", "--to", str(tmp_path / "o"))
    assert bad.returncode == 2 and "holds tree" in bad.stderr


def test_without_the_lab_branch_get_reads_the_main_commit_that_held_the_folder(tmp_path):
    root, data = repo(tmp_path)
    assert lab(root, "put", str(data), "s1", "--machine", "m").returncode == 0
    shutil.copytree(data, root / "bench" / "runs" / "s1")
    sh("git", "add", "bench/runs", cwd=root)
    sh("git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "held", cwd=root)
    held = sh("git", "rev-parse", "--short=12", "HEAD", cwd=root).strip()
    path = root / "bench" / "lab.tsv"
    lines = path.read_text().splitlines()
    path.write_text("\n".join(l[: l.rindex("\t") + 1] + held if l.startswith("s1\t") else l for l in lines) + "\n")
    sh("git", "branch", "-D", "lab", cwd=root)
    r = lab(root, "get", "s1", "--to", str(tmp_path / "o"))
    assert r.returncode == 0, r.stderr
    assert f"from {held}" in r.stdout
    assert (tmp_path / "o" / "s1" / "gpu.txt").read_text() == "162 passed\n"
