#!/usr/bin/env bash
# GPU tests (need a CUDA GPU): the kernel tests and benchmarks, the executor tests, then the custom
# allreduce tests (run_comm_tests.sh). Run through `make test-gpu`, which sets VPSIM (the vpsim binary)
# and VPSIM_KERNEL_TESTS.
#
# Every step's output goes to $GPU_TEST_LOGS/<step>.log (default build/gpu-test-logs) and to stdout;
# counting is tests/gpu/harness.sh's run_step. The last line is exactly "N passed, M failed"; exit
# status 0 iff M = 0.
#
# Knobs: KERNEL_TEST_ARGS (extra arguments of the kernel tests), GPU_TEST_COMM=0 (leave out the
# allreduce section), COMM_TEST_QUICK (default 1 here: the quick size list and no 1,000-call runs at
# 8 ranks; run tests/gpu/run_comm_tests.sh alone for the full list) and the other COMM_TEST_* knobs.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

VPSIM=${VPSIM:-build/vpsim}
KTESTS=${VPSIM_KERNEL_TESTS:-$(dirname "$VPSIM")/vpsim-kernel-tests}
LOGS=${GPU_TEST_LOGS:-build/gpu-test-logs}
mkdir -p "$LOGS"
# shellcheck source=tests/gpu/harness.sh
source tests/gpu/harness.sh

if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "run_gpu_tests: no GPU visible (nvidia-smi -L failed); these tests need one" >&2
fi

# ---- kernels: validation + benchmarks at the default shapes, on the device's own limits.
run_step kernels "$KTESTS" ${KERNEL_TEST_ARGS:-}
# ---- the same kernels with attention held to sm_120's 99 KB of shared memory per block (the
# configuration the RTX PRO 6000 runs), validation only.
run_step kernels-sm120-smem "$KTESTS" --kernel attention --smem-budget 101376 --no-bench --quick
# ---- the general attention kernel on the MLA shapes too, which the MLA kernel takes by default.
run_step kernels-attention-general "$KTESTS" --kernel attention --attn-kernel 1 --no-bench --quick
# ---- and the mma.sync MLA kernel, which the wgmma kernel replaces by default on sm_90a.
run_step kernels-attention-mla-mma "$KTESTS" --kernel attention --attn-kernel 2 --no-bench --quick

# ---- executor tests (sim/exec) live in tests/gpu/steps/*.sh (sourced here; they call run_step), e.g.
#   run_step exec-check-np2 "${MPIRUN[@]}" -np 2 "$VPSIM" run configs/tiny.yaml --device cuda --check
for f in tests/gpu/steps/*.sh; do
    [ -e "$f" ] || continue
    # shellcheck source=/dev/null
    source "$f"
done

# ---- custom allreduce backends: several ranks sharing GPU 0 (virtual ranks), and one GPU per rank
# where there are enough. It needs MPI ranks and a GPU that processes may share.
if [ "${GPU_TEST_COMM:-1}" = 0 ]; then
    echo "=== comm: SKIPPED: GPU_TEST_COMM=0"
elif ! command -v mpirun >/dev/null 2>&1; then
    echo "=== comm: SKIPPED: mpirun not found (apt-get install -y openmpi-bin); the allreduce tests need MPI ranks"
elif [ "$(gpu_count)" -lt 1 ]; then
    echo "=== comm: SKIPPED: no GPU visible"
else
    run_suite comm env VPSIM="$VPSIM" COMM_TEST_QUICK="${COMM_TEST_QUICK:-1}" \
        COMM_TEST_LOGS="${COMM_TEST_LOGS:-$LOGS/comm}" bash tests/gpu/run_comm_tests.sh
fi

harness_summary
