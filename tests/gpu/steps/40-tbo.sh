# shellcheck shell=bash
# Two-batch overlap (overlap.two_batch) on CUDA (sourced by tests/gpu/run_gpu_tests.sh
# after 20-exec.sh and 30-multi-gpu.sh, whose helpers it uses: run_step, MPIRUN, expect_json, bounded,
# MGRUN, ngpu). The split plan (micro-batches a and b, half the rows, weights read twice) replays with
# --check; the replay runs the micro-batches in turn on one stream and says so in the environment.
TBO=(--set workload.batch=3 --set overlap.two_batch=true --iters 3 --warmup 1)
run_step exec-tbo-cuda-mpi-check-np2 "${MPIRUN[@]}" -np 2 "$VPSIM" run configs/tiny.yaml --device cuda \
    --backend mpi --check "${TBO[@]}" --out "$LOGS/tbo-mpi.json"
run_step exec-tbo-cuda-mpi-json expect_json "$LOGS/tbo-mpi.json" \
    '"replayed serially" in d["environment"]["two_batch_overlap"] and d["backends"][0]["cycle_ms"] > 0'
if [ "${ngpu:-0}" -ge 2 ]; then
    for b in nccl oneshot; do
        run_step "mgpu-np2-tbo-$b-graph-check" bounded "${MG_TIMEOUT:-300}" "${MGRUN[@]}" -np 2 "$VPSIM" run \
            configs/tiny.yaml --device cuda --backend "$b" --check "${TBO[@]}"
    done
else
    echo "=== tbo multi-gpu: SKIPPED: ${ngpu:-0} GPU(s); nccl/oneshot with two micro-batches need 2"
fi
