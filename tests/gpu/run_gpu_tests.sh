#!/usr/bin/env bash
# GPU tests (need a CUDA GPU): the kernel tests and benchmarks, then the executor tests.
# Run through `make test-gpu`, which sets VPSIM (the vpsim binary) and VPSIM_KERNEL_TESTS.
#
# Every step's output goes to $GPU_TEST_LOGS/<step>.log (default build/gpu-test-logs) and to stdout.
# A step that prints result lines (`... ok=0|1 ...`) counts one test per line; any other step counts as
# one test, passed when it exits 0. A step that exits non-zero without a failing line (a crash, a CUDA
# error) adds one failure. The last line is exactly "N passed, M failed"; exit status 0 iff M = 0.
set -uo pipefail
cd "$(dirname "$0")/../.."

VPSIM=${VPSIM:-build/vpsim}
KTESTS=${VPSIM_KERNEL_TESTS:-$(dirname "$VPSIM")/vpsim-kernel-tests}
LOGS=${GPU_TEST_LOGS:-build/gpu-test-logs}
mkdir -p "$LOGS"

passed=0
failed=0
failed_steps=()

# run_step NAME COMMAND [ARGS...]
run_step() {
    local name=$1 log="$LOGS/$1.log" rc oks bads
    shift
    echo "=== $name: $*"
    "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    oks=$(grep -c ' ok=1 ' "$log")
    bads=$(grep -c ' ok=0 ' "$log")
    if [ $((oks + bads)) -eq 0 ]; then
        if [ "$rc" -eq 0 ]; then oks=1; else bads=1; fi
    elif [ "$rc" -ne 0 ] && [ "$bads" -eq 0 ]; then
        bads=1 # exited non-zero after passing lines: a crash or CUDA error mid-way
    fi
    passed=$((passed + oks))
    failed=$((failed + bads))
    if [ "$bads" -ne 0 ]; then
        failed_steps+=("$name (exit $rc, $bads failed; log $log)")
    fi
}

if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "run_gpu_tests: no GPU visible (nvidia-smi -L failed); these tests need one" >&2
fi

# ---- kernels: validation + benchmarks at the default shapes, on the device's own limits.
run_step kernels "$KTESTS" ${KERNEL_TEST_ARGS:-}
# ---- the same kernels with attention held to sm_120's 99 KB of shared memory per block (the
# configuration the RTX PRO 6000 runs), validation only.
run_step kernels-sm120-smem "$KTESTS" --kernel attention --smem-budget 101376 --no-bench --quick

# ---- executor tests (sim/exec): add run_step lines here, e.g.
#   run_step exec-none-np1 "$VPSIM" run configs/default.yaml --backend none --iters 3
#   run_step exec-check-np2 mpirun -np 2 "$VPSIM" run configs/tiny.yaml --device cuda --check
# Extra steps can also live in tests/gpu/steps/*.sh (sourced here; they may call run_step).
if [ -d tests/gpu/steps ]; then
    for f in tests/gpu/steps/*.sh; do
        [ -e "$f" ] || continue
        # shellcheck source=/dev/null
        source "$f"
    done
fi

if [ ${#failed_steps[@]} -ne 0 ]; then
    echo "failed steps:"
    printf '  %s\n' "${failed_steps[@]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
