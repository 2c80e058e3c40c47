"""scripts/doc_examples.py: a stale example fails the check, --write mends it, timings and exits as marked."""
import os
import shutil
import subprocess
import sys

import pytest

from scripts_paths import BIN, REPO, SCRIPTS

TOOL = os.path.join(SCRIPTS, "doc_examples.py")


def run_tool(*args, root=REPO):
    return subprocess.run([sys.executable, TOOL, "--root", root, *args], capture_output=True, text=True)


def write(tmp_path, text, name="doc.md"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def block(cmd, body, kind=None):
    k = f" ({kind})" if kind else ""
    return f"intro\n\n<!-- example{k}: {cmd} -->\n```\n$ {cmd}\n{body}\n```\n<!-- /example -->\n\noutro\n"


def test_a_current_block_passes_and_a_stale_one_fails_naming_file_line_and_diff(tmp_path):
    ok = write(tmp_path, block("echo hello", "hello"))
    r = run_tool("--check", ok)
    assert r.returncode == 0, r.stderr
    assert "1 example block(s) current" in r.stdout
    stale = write(tmp_path, block("echo hello", "goodbye"), "stale.md")
    r = run_tool("--check", stale)
    assert r.returncode == 1
    assert f"{stale}:3: stale example" in r.stderr
    assert "-goodbye" in r.stderr and "+hello" in r.stderr
    assert "make docs" in r.stderr


def test_write_rewrites_only_the_block_and_the_check_then_passes(tmp_path):
    p = write(tmp_path, block("printf 'a\\nb\\n'", "old output\nmore old output"))
    assert run_tool("--write", p).returncode == 0
    text = open(p).read()
    assert text == block("printf 'a\\nb\\n'", "a\nb")
    assert run_tool("--check", p).returncode == 0


def test_timings_blocks_compare_with_numbers_masked_but_words_exact(tmp_path):
    same_shape = write(tmp_path, block("echo 'cycle 1.234 ms'", "cycle   98.7 ms", "timings"))
    assert run_tool("--check", same_shape).returncode == 0
    other_words = write(tmp_path, block("echo 'cycle 1.234 ms'", "cycle 1.234 us", "timings"), "w.md")
    assert run_tool("--check", other_words).returncode == 1
    # Not masked when the block does not say timings: a figure that moved is stale.
    exact = write(tmp_path, block("echo 'cycle 1.234 ms'", "cycle 1.235 ms"), "e.md")
    assert run_tool("--check", exact).returncode == 1


def test_an_unexpected_exit_status_is_an_error_and_an_expected_one_is_not(tmp_path):
    failing = write(tmp_path, block("echo out; exit 3", "out"))
    r = run_tool("--check", failing)
    assert r.returncode == 2
    assert "exited 3 (expected 0)" in r.stderr
    expected = write(tmp_path, block("echo out; exit 3", "out", "exit 3"), "x.md")
    assert run_tool("--check", expected).returncode == 0


def test_measured_blocks_are_not_run_but_need_their_command_line(tmp_path):
    p = write(tmp_path, block("no-such-command --gpu", "figures from a GPU", "measured: 2026-12-01, nvidia-h200"))
    assert run_tool("--check", p).returncode == 0
    bad = write(tmp_path, "<!-- example (measured: 2026-12-01, h200): x -->\n```\nno prompt line\n```\n<!-- /example -->\n",
                "m.md")
    r = run_tool("--check", bad)
    assert r.returncode == 1 and "'$ command' line" in r.stderr


@pytest.mark.parametrize("text,what", [
    ("<!-- example: echo a -->\nno fence\n", "must be followed by a fenced block"),
    ("<!-- example: echo a -->\n```\n$ echo a\na\n", "not closed"),
    ("<!-- example: echo a -->\n```\n$ echo a\na\n```\n", "must end with"),
    ("<!-- example (fast): echo a -->\n```\n$ echo a\na\n```\n<!-- /example -->\n", "unknown example kind 'fast'"),
    ("<!-- example echo a -->\n", "a marker that does not parse"),
])
def test_malformed_markers_are_refused_with_the_line(tmp_path, text, what):
    p = write(tmp_path, text)
    r = run_tool("--check", p)
    assert r.returncode == 2
    assert what in r.stderr and f"{p}:" in r.stderr


def test_commands_run_in_a_scratch_folder_not_the_checkout(tmp_path):
    p = write(tmp_path, block("touch vpsim-docs-probe && ls build >/dev/null && echo ok", "ok"))
    assert run_tool("--check", p).returncode == 0
    assert not os.path.exists(os.path.join(REPO, "vpsim-docs-probe"))


@pytest.mark.skipif(not os.access(BIN, os.X_OK), reason="needs build/vpsim (make)")
def test_a_deliberately_stale_readme_block_fails_the_check(tmp_path):
    """The check CI runs (make docs-check) on a copy of the README with one figure of the model's table moved."""
    readme = open(os.path.join(REPO, "README.md")).read()
    marker = "<!-- example: build/vpsim model configs/default.yaml -->"
    assert marker in readme
    start = readme.index(marker)
    row = readme.index("\nnccl ", start) + 1
    end = readme.index("\n", row)
    line = readme[row:end]
    moved = line.replace("62.3", "99.9") if "62.3" in line else line + " 1"
    copy = write(tmp_path, readme[:row] + moved + readme[end:], "README.md")
    r = run_tool("--check", copy)
    assert r.returncode == 1, r.stderr
    assert f"{copy}:{readme[:start].count(chr(10)) + 1}: stale example (exact): 'build/vpsim model configs/default.yaml'" in r.stderr
    assert "-" + moved in r.stderr and "+" + line in r.stderr
