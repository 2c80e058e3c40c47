"""Every command of the README's shell blocks runs as printed (as root too: the mpirun lines carry
--allow-run-as-root). Commands that need a GPU are run too: on a machine without one they must get as far
as the device check (exit 2, "no usable CUDA device"), so a typo in an option or a path still fails here;
on a machine with GPUs they are left to `make test-gpu`. `make` lines are checked with `make -n`."""
import os
import re
import shutil
import subprocess

import pytest

from scripts_paths import BIN, REPO

import doc_examples


def readme_commands():
    text = open(os.path.join(REPO, "README.md")).read()
    cmds = []
    for blk in re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M):
        joined = re.sub(r"\\\n\s*", " ", blk)
        for line in joined.split("\n"):
            line = re.sub(r"\s+#.*$", "", line).strip()
            if line and not line.startswith("#"):
                cmds.append(line)
    return cmds


def has_gpu():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    r = subprocess.run([smi, "-L"], capture_output=True, text=True)
    return r.returncode == 0 and "GPU" in r.stdout


def needs_gpu(cmd):
    return "--device cpu" not in cmd and bool(
        re.search(r"build/vpsim (run|probe|bench-allreduce|calibrate --measure)", cmd))


COMMANDS = readme_commands()


def test_the_readme_has_the_two_setup_commands_first():
    assert COMMANDS[:2] == ["make deps && make run", "make check"], COMMANDS[:2]
    assert len(COMMANDS) >= 10


@pytest.mark.parametrize("cmd", COMMANDS)
def test_readme_command_runs_as_printed(cmd, tmp_path):
    if cmd.startswith("make "):
        for target in re.findall(r"make (\S+)", cmd):
            r = subprocess.run(["make", "-n", "-C", REPO, target], capture_output=True, text=True)
            assert r.returncode == 0, f"make {target}: {r.stderr}"
        return
    if not os.access(BIN, os.X_OK):
        pytest.skip("needs build/vpsim (make)")
    gpu = needs_gpu(cmd)
    if gpu and has_gpu():
        pytest.skip("a GPU command on a GPU machine: make test-gpu runs the GPU paths")
    d = doc_examples.scratch_dir(REPO)
    # Oversubscription through the environment: `mpirun -np 8` as printed, on a machine with fewer cores.
    env = dict(os.environ, OMPI_MCA_rmaps_base_oversubscribe="1")
    try:
        r = subprocess.run(["bash", "-c", cmd], cwd=d, env=env, capture_output=True, text=True, timeout=300)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if gpu:
        assert r.returncode == 2, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
        assert "no usable CUDA device here" in r.stderr, r.stderr[-2000:]
    else:
        assert r.returncode == 0, f"exit {r.returncode}\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}"
        assert r.stdout.strip(), "printed nothing"
