# shellcheck shell=bash
# One GPU per rank (sourced by tests/gpu/run_gpu_tests.sh; uses run_step and gpu_count from
# tests/gpu/harness.sh, $VPSIM, $LOGS). Runs when the machine has 2 or more GPUs, at 2 ranks
# (MULTI_GPU_RANKS overrides, e.g. "2 4 8"); skipped, saying so, otherwise. Unlike the virtual-rank steps, these cross a real interconnect, so they are what proves
# a collective path (NCCL refuses virtual ranks). Every step is bounded by `timeout`: a hang fails the
# step (exit 124 or 137) instead of stalling the suite.
#
#   - every backend x graph/eager x --check over 256 B .. 64 MiB (plus odd sizes and the verify payload);
#   - 1,000 back-to-back calls in one CUDA graph, checked after the last;
#   - `vpsim run` per backend with --check (collectives inside the cycle's graph), and eager;
#   - NCCL with NCCL_P2P_DISABLE=1 (transport through host memory), graph and eager;
#   - the watchdog on a real NCCL job: a rank stalled on the host ends the job, every rank naming where.
MG_TIMEOUT=${MULTI_GPU_STEP_TIMEOUT:-300}
ngpu=$(gpu_count)
MGRUN=(mpirun --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE=0 -x NCCL_DEBUG)
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on shared hosts (see the device notes)
: "${NCCL_DEBUG:=WARN}"
export NCCL_DEBUG

# bounded SECONDS COMMAND...: the command, killed after SECONDS (a hang is a failure).
bounded() {
    local secs=$1 rc
    shift
    timeout -k 10 "$secs" "$@"
    rc=$?
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        echo "HANG: still running after ${secs}s: $*"
    fi
    return "$rc"
}

# bench_ok LOG: the bench's table ran every backend named and reported no wrong element.
bench_ok() {
    grep -q '#wrong total: 0 (OK)' "$1" && ! grep -q ': unsupported: ' "$1"
}

# bench_step OUT COMMAND...: a bench-allreduce run, bounded; passes when it exits 0, every backend
# named ran, and no element was wrong.
bench_step() {
    local out=$1 rc
    shift
    bounded "$MG_TIMEOUT" "$@" >"$out" 2>&1
    rc=$?
    cat "$out"
    [ "$rc" -eq 0 ] && bench_ok "$out"
}

# expect_watchdog NP LOG COMMAND...: the job must exit non-zero within the step's bound and every rank
# must print its watchdog line.
expect_watchdog() {
    local np=$1 log=$2 rc r
    shift 2
    bounded 120 "$@" >"$log" 2>&1
    rc=$?
    cat "$log"
    echo "exit $rc"
    [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || return 1
    for ((r = 0; r < np; r++)); do
        grep -q "vpsim\[rank $r@.*watchdog: no progress" "$log" || { echo "no watchdog line from rank $r"; return 1; }
    done
}

if [ "$ngpu" -lt 2 ]; then
    echo "=== multi-gpu: SKIPPED: this machine has $ngpu GPU(s); these steps need 2 or more (one GPU per rank)"
else
    for np in ${MULTI_GPU_RANKS:-2}; do
        if [ "$ngpu" -lt "$np" ]; then
            echo "=== multi-gpu np$np: SKIPPED: $ngpu GPU(s)"
            continue
        fi
        for mode in eager graph; do
            flag=$([ "$mode" = graph ] && echo --graph)
            run_step "mgpu-np$np-all-$mode-check" bench_step "$LOGS/mgpu-np$np-all-$mode.out" "${MGRUN[@]}" \
                -np "$np" "$VPSIM" bench-allreduce configs/default.yaml --backend all --check -b 256 -e 64M \
                -n 5 -w 2 $flag
        done
        run_step "mgpu-np$np-odd-sizes-graph-check" bench_step "$LOGS/mgpu-np$np-odd.out" "${MGRUN[@]}" -np "$np" \
            "$VPSIM" bench-allreduce --backend all --check --sizes 2,18,1000,65538,8388606 -n 3 -w 1 --graph
        run_step "mgpu-np$np-b2b1000-graph-check" bench_step "$LOGS/mgpu-np$np-b2b.out" "${MGRUN[@]}" -np "$np" \
            "$VPSIM" bench-allreduce --backend nccl,nccl-symm,oneshot,twoshot,push --sizes 1000,43008 -n 1000 -w 0 --graph --check
        for b in nccl nccl-symm oneshot twoshot push mpi; do
            run_step "mgpu-np$np-run-$b-graph-check" bounded "$MG_TIMEOUT" "${MGRUN[@]}" -np "$np" "$VPSIM" run \
                configs/tiny.yaml --device cuda --backend "$b" --check --iters 3 --warmup 1
        done
        # The run compares its whole cycle with the model of the same backend and launch mode (on a system
        # file with peers: the tiny scenario's own h200-1x has none, so NCCL is not modelled there).
        run_step "mgpu-np$np-run-nccl-json" bounded "$MG_TIMEOUT" "${MGRUN[@]}" -np "$np" "$VPSIM" run \
            configs/tiny.yaml --device cuda --backend nccl --iters 3 --warmup 1 --out "$LOGS/mgpu-np$np-nccl.json" \
            --system configs/systems/h200-2x-nvlink.yaml
        run_step "mgpu-np$np-run-nccl-json-cycle" expect_json "$LOGS/mgpu-np$np-nccl.json" \
            'd["model_comparison"]["backend_cycle"]["backend"] == "nccl" and d["model_comparison"]["backend_cycle"]["graph"] == d["measured"]["graph"] and d["model_comparison"]["backend_cycle"]["measured_ms"] > 0 and d["model_comparison"]["backend_cycle"]["modelled_ms"] > 0'
        for b in nccl oneshot; do
            run_step "mgpu-np$np-run-$b-eager-check" bounded "$MG_TIMEOUT" "${MGRUN[@]}" -np "$np" "$VPSIM" run \
                configs/tiny.yaml --device cuda --backend "$b" --check --iters 3 --warmup 1 --eager
        done
        for mode in eager graph; do
            flag=$([ "$mode" = graph ] && echo --graph)
            run_step "mgpu-np$np-nccl-p2p-off-$mode-check" bench_step "$LOGS/mgpu-np$np-p2p-off-$mode.out" \
                env NCCL_P2P_DISABLE=1 \
                "${MGRUN[@]}" -x NCCL_P2P_DISABLE -np "$np" "$VPSIM" bench-allreduce --backend nccl --check \
                --sizes 256,43008,1048576,8388606 -n 5 -w 2 $flag
        done
        run_step "mgpu-np$np-nccl-p2p-off-run-graph-check" bounded "$MG_TIMEOUT" env NCCL_P2P_DISABLE=1 \
            "${MGRUN[@]}" -x NCCL_P2P_DISABLE -np "$np" "$VPSIM" run configs/tiny.yaml --device cuda \
            --backend nccl --check --iters 3 --warmup 1
        run_step "mgpu-np$np-watchdog-nccl-graph" expect_watchdog "$np" "$LOGS/mgpu-np$np-watchdog.log" \
            "${MGRUN[@]}" -np "$np" "$VPSIM" bench-allreduce --backend nccl --sizes 43008 -n 20 -w 2 --graph \
            --inject-fault stall:1:3:100 --timeout 5
    done
fi
