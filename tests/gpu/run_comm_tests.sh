#!/usr/bin/env bash
# GPU tests of the custom allreduce backends (oneshot, twoshot, push) and nccl/nccl-symm, through
# `vpsim bench-allreduce` and `vpsim run`. Needs one CUDA GPU and mpirun; several MPI ranks share the
# GPU ("virtual ranks": processes mapping each other's memory with CUDA IPC), which tests the kernels'
# protocol, not any interconnect.
#
#   1. --check over sizes 2 B .. 8 MiB, many not multiples of 16, eager and inside CUDA graphs, at
#      2, 4 and 8 ranks: every rank bit-identical and within bf16 tolerance of an fp64 reference,
#      in place too (#wrong must be 0);
#   2. 1,000 back-to-back calls, eager and as one CUDA graph, result checked after the last;
#   3. `vpsim run` replays (allreduce + all-gather inside the cycle graph) with --check;
#   4. faults: a rank killed or exiting mid-run, a rank stalled past the kernels' timeout: the others
#      must exit with an error (naming rank, peer and flag for the stall), never hang (bounded by
#      `timeout`);
#   5. compute-sanitizer memcheck, racecheck and synccheck at 2 ranks, where the tool exists;
#   6. fusion.allreduce_residual_norm: `vpsim run --check` with allreduce_norm ops (fused oneshot and push,
#      unfused twoshot, mpi; nccl where each rank has a GPU);
#   7. nccl and nccl-symm: refused with a clear reason on virtual ranks; run with --check when the
#      machine has a GPU per rank;
#   8. collectives.allreduce_split: `vpsim run --check` with the split for oneshot, twoshot, push, mpi
#      (virtual ranks) and nccl (a GPU per rank), and bench-allreduce --collective reduce_scatter --check.
#   9. expert parallelism (section ep, 2 GPUs): `vpsim run --check` of the tiny EP=2 plan (dispatch and
#      combine all-to-alls) with nccl and mpi, and the all-to-all alone in bench-allreduce.
#
# Knobs: VPSIM (binary, default build/vpsim), COMM_TEST_RANKS ("2 4 8"), COMM_TEST_GPU (the GPU the
# virtual ranks share, default 0), COMM_TEST_LOGS (default build/comm-test-logs), COMM_TEST_QUICK=1
# (fewer sizes, no 1,000-call runs at 8 ranks), COMM_TEST_STEP_TIMEOUT (seconds per step, 240),
# COMM_TEST_SECTIONS (default "check b2b run policy fusion json nccl faults sanitizer gpus split ep": a
# subset, e.g.
# to stay within a per-command time limit).
# Each step's output is in $COMM_TEST_LOGS/<step>.log. Last line: "N passed, M failed"; exit status
# 0 iff M = 0 (counting: tests/gpu/harness.sh). `make test-gpu` runs this script as a section of
# run_gpu_tests.sh, with the quick list by default.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

VPSIM=${VPSIM:-build/vpsim}
LOGS=${COMM_TEST_LOGS:-build/comm-test-logs}
RANKS=${COMM_TEST_RANKS:-"2 4 8"}
GPU=${COMM_TEST_GPU:-0}
QUICK=${COMM_TEST_QUICK:-0}
STEP_TIMEOUT=${COMM_TEST_STEP_TIMEOUT:-240}
SECTIONS=" ${COMM_TEST_SECTIONS:-check b2b run policy fusion json nccl faults sanitizer gpus split ep} "
want() { [[ "$SECTIONS" == *" $1 "* ]]; }
CUSTOM=oneshot,twoshot,push
mkdir -p "$LOGS"
# shellcheck source=tests/gpu/harness.sh
source tests/gpu/harness.sh
export OMPI_MCA_rmaps_base_oversubscribe=1

# Sizes in bytes (bf16: 2 bytes per element): tiny, around 16-byte boundaries, the verify pass's
# 43,008, and up to 8 MiB, with odd element counts near every power of two.
if [ "$QUICK" = 1 ]; then
    SIZES=2,18,1000,43008,65538,1048576,8388606
else
    SIZES=2,6,16,18,30,32,34,62,100,126,1000,2050,4096,43008,65538,131070,262142,262144,1048576,2097154,4194302,8388606,8388608
fi

if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "run_comm_tests: no GPU visible (nvidia-smi -L failed); these tests need one" >&2
fi
if ! command -v mpirun >/dev/null 2>&1; then
    echo "run_comm_tests: mpirun not found; install Open MPI (apt-get install -y openmpi-bin)" >&2
    count mpirun 0 1 "mpirun not found"
    harness_summary
    exit 1
fi
ngpus=$(gpu_count)
echo "run_comm_tests: $ngpus GPU(s); virtual ranks share GPU $GPU; ranks: $RANKS; logs in $LOGS"
# Virtual ranks are several processes on one GPU: a GPU that admits one process at a time cannot
# host them (the per-GPU section below still runs).
mode=$(nvidia-smi --query-gpu=compute_mode --format=csv,noheader -i "$GPU" 2>/dev/null || true)
if [ "$mode" = Exclusive_Process ]; then
    echo "run_comm_tests: virtual-rank sections SKIPPED: GPU $GPU is in compute mode $mode"
    SECTIONS=" $(want gpus && echo gpus) $(want ep && echo ep) "
fi

# ---------------------------------------------------------------- virtual ranks on one GPU
saved_cvd=${CUDA_VISIBLE_DEVICES-__unset__}
export CUDA_VISIBLE_DEVICES=$GPU
for np in $RANKS; do
    if want check; then
        ok_step "check-eager-np$np" "${MPIRUN[@]}" -np "$np" "$VPSIM" bench-allreduce configs/default.yaml \
            --backend "$CUSTOM" --check --sizes "$SIZES" -n 5 -w 2
        ok_step "check-graph-np$np" "${MPIRUN[@]}" -np "$np" "$VPSIM" bench-allreduce configs/default.yaml \
            --backend "$CUSTOM" --check --sizes "$SIZES" -n 5 -w 2 --graph
    fi
    if want b2b && { [ "$QUICK" != 1 ] || [ "$np" -lt 8 ]; }; then
        ok_step "b2b1000-eager-np$np" "${MPIRUN[@]}" -np "$np" "$VPSIM" bench-allreduce --backend "$CUSTOM" \
            --sizes 1000,43008 -n 1000 -w 0
        ok_step "b2b1000-graph-np$np" "${MPIRUN[@]}" -np "$np" "$VPSIM" bench-allreduce --backend "$CUSTOM" \
            --sizes 1000,43008 -n 1000 -w 0 --graph --check
    fi
    if want run; then
        for b in oneshot twoshot push; do
            ok_step "run-$b-np$np" "${MPIRUN[@]}" -np "$np" "$VPSIM" run configs/tiny.yaml --device cuda --backend "$b" \
                --check --iters 3 --warmup 1
        done
    fi
done

# fusion.allreduce_residual_norm: every allreduce_norm of the cycle checked against the host reference
# (recv and the residual). oneshot and push run their fused kernels; twoshot and mpi the unfused sequence;
# nccl needs a GPU per rank (below).
if want fusion; then
    for b in oneshot push twoshot mpi; do
        ok_step "fusion-$b-np2" "${MPIRUN[@]}" -np 2 "$VPSIM" run configs/tiny.yaml --device cuda --backend "$b" \
            --set fusion.allreduce_residual_norm=true --check --iters 3 --warmup 1
    done
fi

# The per-size composite (comm_select) over the custom kernels, inside graphs.
if want policy; then
    ok_step policy-graph-np4 "${MPIRUN[@]}" -np 4 "$VPSIM" bench-allreduce --policy "oneshot<=64K,twoshot<=1M,push" \
        --check --sizes "$SIZES" -n 5 -w 2 --graph
fi

# JSON: the virtual-ranks caveat and the per-backend environment are in the document.
if want json; then
    ok_step json-np2 "${MPIRUN[@]}" -np 2 "$VPSIM" bench-allreduce --backend "$CUSTOM" --sizes 43008 -n 3 --format json --out "$LOGS/bench-np2.json"
    if ! grep -q '"virtual_ranks": true' "$LOGS/bench-np2.json" 2>/dev/null ||
        ! grep -q '"custom_p2p_check"' "$LOGS/bench-np2.json" 2>/dev/null; then
        note_result json-np2-content 0 "$LOGS/json-np2.log" "bench-np2.json lacks virtual_ranks=true or custom_p2p_check"
    else
        note_result json-np2-content 1 "$LOGS/json-np2.log" ""
    fi
fi

# NCCL refuses several ranks on one GPU: an 'unsupported' row with the reason, not a crash.
if want nccl; then
    ok_step nccl-refused-np2 "${MPIRUN[@]}" -np 2 "$VPSIM" bench-allreduce --sizes 43008 -n 3
    if grep -Eq '# backend nccl: unsupported: .*one GPU per rank' "$LOGS/nccl-refused-np2.log" &&
        grep -Eq '# backend nccl-symm: unsupported: ' "$LOGS/nccl-refused-np2.log"; then
        note_result nccl-refused-np2-reason 1 "$LOGS/nccl-refused-np2.log" ""
    else
        note_result nccl-refused-np2-reason 0 "$LOGS/nccl-refused-np2.log" "no clear 'unsupported' rows for nccl, nccl-symm"
    fi
fi

# ---- faults (4 ranks, or 2 when fewer are asked for)
fnp=4
case " $RANKS " in *" 4 "*) ;; *) fnp=2 ;; esac
if want faults; then
    fail_step "kill-oneshot-np$fnp" 120 'inject-fault kill' \
        "${MPIRUN[@]}" -np "$fnp" "$VPSIM" bench-allreduce --backend oneshot --sizes 43008 -n 400 -w 0 --inject-fault kill:1:60
    fail_step "exit-push-np$fnp" 120 'inject-fault exit' \
        "${MPIRUN[@]}" -np "$fnp" "$VPSIM" bench-allreduce --backend push --sizes 43008 -n 400 -w 0 --inject-fault exit:$((fnp - 1)):60
    for b in oneshot twoshot push; do
        VPSIM_COMM_TIMEOUT_MS=2000 fail_step "stall-$b-np$fnp" 90 "gave up after [0-9]+ ms in block [0-9]+ waiting for peer rank [0-9]+'s '(start|mid|end|data)' flag" \
            "${MPIRUN[@]}" -np "$fnp" "$VPSIM" bench-allreduce --backend "$b" --sizes 43008 -n 100 -w 0 --inject-fault stall:1:30:8
    done
fi

# ---- compute-sanitizer (the kernels run far slower under it: long timeouts)
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if ! want sanitizer; then
    :
elif [ -x "$SAN" ]; then
    for tool in memcheck racecheck synccheck; do
        VPSIM_COMM_TIMEOUT_MS=300000 ok_step "sanitizer-$tool-np2" "${MPIRUN[@]}" -np 2 "$SAN" --tool "$tool" \
            --error-exitcode 9 --print-limit 20 "$VPSIM" bench-allreduce --backend "$CUSTOM" --check \
            --sizes 16,18,1000,43008 -n 3 -w 1
    done
else
    echo "run_comm_tests: compute-sanitizer not found: sanitizer steps skipped"
fi
if [ "$saved_cvd" = __unset__ ]; then unset CUDA_VISIBLE_DEVICES; else export CUDA_VISIBLE_DEVICES=$saved_cvd; fi

# ---------------------------------------------------------------- one GPU per rank, when there are enough
for np in 2 4 8; do
    if want gpus && [ "$ngpus" -ge "$np" ]; then
        ok_step "gpus-check-graph-np$np" "${MPIRUN[@]}" -np "$np" "$VPSIM" bench-allreduce configs/default.yaml --backend nccl,nccl-symm,"$CUSTOM" --check \
            --sizes "$SIZES" -n 5 -w 2 --graph
    fi
done

# ---------------------------------------------------------------- collectives.allreduce_split
# The split's reduce-scatters and all-gathers replayed with --check, and the reduce-scatter alone over
# the sweep (eager and as graphs): virtual ranks for the custom kernels and mpi, a GPU per rank for nccl.
if want split; then
    if [ "$mode" != Exclusive_Process ]; then
        for b in oneshot twoshot push mpi; do
            CUDA_VISIBLE_DEVICES=$GPU ok_step "split-run-$b-np2" "${MPIRUN[@]}" -np 2 "$VPSIM" run configs/tiny.yaml \
                --device cuda --backend "$b" --set collectives.allreduce_split=true --check --iters 3 --warmup 1
        done
        CUDA_VISIBLE_DEVICES=$GPU ok_step split-bench-rs-eager-np2 "${MPIRUN[@]}" -np 2 "$VPSIM" bench-allreduce \
            --collective reduce_scatter --backend "$CUSTOM",mpi --check --sizes "$SIZES" -n 5 -w 2
        CUDA_VISIBLE_DEVICES=$GPU ok_step split-bench-rs-graph-np2 "${MPIRUN[@]}" -np 2 "$VPSIM" bench-allreduce \
            --collective reduce_scatter --backend "$CUSTOM" --check --sizes "$SIZES" -n 5 -w 2 --graph
    fi
    if [ "$ngpus" -ge 2 ]; then
        # NVLink multicast stays off on shared hosts (tests/gpu/steps/30-multi-gpu.sh says why).
        export NCCL_NVLS_ENABLE=0
        ok_step split-run-nccl-np2 "${MPIRUN[@]}" -np 2 "$VPSIM" run configs/tiny.yaml --device cuda --backend nccl \
            --set collectives.allreduce_split=true --check --iters 3 --warmup 1
        ok_step split-bench-rs-gpus-np2 "${MPIRUN[@]}" -np 2 "$VPSIM" bench-allreduce --collective reduce_scatter \
            --backend nccl,"$CUSTOM" --check --sizes "$SIZES" -n 5 -w 2 --graph
    fi
fi

# Expert parallelism: the all-to-all (grouped ncclSend/ncclRecv; host-staged MPI_Alltoall) inside the EP
# plan's cycle and alone, one GPU per rank (NCCL refuses virtual ranks).
if want ep && [ "$ngpus" -ge 2 ]; then
    for b in nccl mpi; do
        ok_step "ep-run-$b-np2" "${MPIRUN[@]}" -np 2 "$VPSIM" run configs/tiny.yaml --device cuda --backend "$b" \
            --set parallel.tp=2 --set parallel.ep=2 --check --iters 3 --warmup 1
    done
    ok_step ep-run-dp-nccl-np2 "${MPIRUN[@]}" -np 2 "$VPSIM" run configs/tiny.yaml --device cuda --backend nccl \
        --set parallel.ep=2 --set parallel.dp_attention=true --set workload.batch=2 --check --iters 3 --warmup 1
    ok_step ep-bench-alltoall-np2 "${MPIRUN[@]}" -np 2 "$VPSIM" bench-allreduce configs/default.yaml \
        --collective alltoall --backend nccl,mpi --check --sizes 1024,114688,1048576 -n 5 -w 2
fi

if want fusion && [ "$ngpus" -ge 2 ]; then
    for b in nccl oneshot push; do
        ok_step "fusion-gpus-$b-np2" "${MPIRUN[@]}" -np 2 "$VPSIM" run configs/tiny.yaml --device cuda --backend "$b" \
            --set fusion.allreduce_residual_norm=true --check --iters 3 --warmup 1
    done
fi

harness_summary
