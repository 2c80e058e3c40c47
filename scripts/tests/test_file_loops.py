"""scripts/file_loops.py finds two files that call each other, honours its allow-list, and refuses a
stale allowance: small C files compiled here, the checker run on their objects."""
import os
import subprocess
import sys

from scripts_paths import SCRIPTS

CHECKER = os.path.join(SCRIPTS, "file_loops.py")


def tree(tmp_path, files):
    root, obj = tmp_path / "root", tmp_path / "obj"
    for name, text in files.items():
        src = root / "sim" / "x" / name
        src.parent.mkdir(parents=True, exist_ok=True)
        src.write_text(text)
        out = obj / "sim" / "x" / (name[:-2] + ".o")
        out.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["gcc", "-c", "-o", str(out), str(src)], check=True)
    return root, obj


def check(root, obj, allow):
    return subprocess.run([sys.executable, CHECKER, "--root", str(root), "--objdir", str(obj), "--allow", str(allow)],
                          capture_output=True, text=True)


A_CALLS_B = "int b_f(void);\nint a_f(void) { return b_f(); }\n"
B_CALLS_A = "int a_f(void);\nint b_f(void) { return 1; }\nint b_g(void) { return a_f(); }\n"
B_ALONE = "int b_f(void) { return 1; }\n"


def test_two_files_calling_each_other_are_a_loop_naming_the_symbols(tmp_path):
    root, obj = tree(tmp_path, {"a.c": A_CALLS_B, "b.c": B_CALLS_A})
    r = check(root, obj, tmp_path / "none.allow")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "LOOP: sim/x/a.c <-> sim/x/b.c" in r.stdout
    assert "sim/x/a.c -> sim/x/b.c: b_f" in r.stdout and "sim/x/b.c -> sim/x/a.c: a_f" in r.stdout


def test_an_allowed_loop_passes_and_a_one_way_call_is_none(tmp_path):
    root, obj = tree(tmp_path, {"a.c": A_CALLS_B, "b.c": B_CALLS_A})
    allow = tmp_path / "loops.allow"
    allow.write_text("sim/x/b.c sim/x/a.c  # kept on purpose\n")
    r = check(root, obj, allow)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "allowed: sim/x/a.c <-> sim/x/b.c" in r.stdout
    root2, obj2 = tree(tmp_path / "two", {"a.c": A_CALLS_B, "b.c": B_ALONE})
    r = check(root2, obj2, tmp_path / "none.allow")
    assert r.returncode == 0 and "0 loop(s)" in r.stdout, r.stdout + r.stderr


def test_an_allowance_for_a_loop_that_is_gone_fails(tmp_path):
    root, obj = tree(tmp_path, {"a.c": A_CALLS_B, "b.c": B_ALONE})
    allow = tmp_path / "loops.allow"
    allow.write_text("sim/x/a.c sim/x/b.c  # was a loop\n")
    r = check(root, obj, allow)
    assert r.returncode == 1 and "no loop now" in r.stderr, r.stdout + r.stderr


def test_a_stale_object_without_its_source_is_skipped(tmp_path):
    root, obj = tree(tmp_path, {"a.c": A_CALLS_B, "b.c": B_CALLS_A})
    os.remove(root / "sim" / "x" / "b.c")  # renamed away; its .o left behind
    r = check(root, obj, tmp_path / "none.allow")
    assert r.returncode == 0, r.stdout + r.stderr
