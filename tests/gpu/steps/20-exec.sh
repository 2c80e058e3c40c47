# shellcheck shell=bash
# Executor tests on a CUDA GPU (sourced by tests/gpu/run_gpu_tests.sh; uses run_step and MPIRUN from
# tests/gpu/harness.sh, $VPSIM, $LOGS). Several ranks on one GPU are virtual ranks: these check protocols
# and results, not interconnect timing.
PY=$(command -v python3 || echo /usr/bin/python3)

# expect_json FILE PYTHON-EXPR: the expression (over `d`, the parsed file) must be true.
expect_json() {
    "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); ok=eval(sys.argv[2]); print("json check:", sys.argv[2], "->", ok); sys.exit(0 if ok else 1)' "$1" "$2"
}
# expect_exit CODE COMMAND...: passes when the command exits with CODE.
expect_exit() {
    local want=$1 rc
    shift
    "$@"
    rc=$?
    echo "exit $rc (expected $want)"
    [ "$rc" -eq "$want" ]
}

R=("$VPSIM" run configs/default.yaml --system configs/systems/h200-1x.yaml --iters 10 --warmup 2)
run_step exec-default-none-graph "${R[@]}" --backend none --out "$LOGS/none-graph.json" --trace "$LOGS/none-trace.json"
run_step exec-default-none-graph-json expect_json "$LOGS/none-graph.json" \
    'd["measured"]["graph"] and d["backends"][0]["cycle_ms"] > 0 and d["model_comparison"]["system"] == "h200-1x"'
run_step exec-default-trace-json expect_json "$LOGS/none-trace.json" \
    'sum(1 for e in d["traceEvents"] if e["ph"] == "X") > 1000'
run_step exec-default-none-eager "${R[@]}" --backend none --eager --out "$LOGS/none-eager.json"
run_step exec-model-backend "${R[@]}" --backend model --target-system configs/systems/rtx-pro-6000-8x-pcie.yaml \
    --out "$LOGS/model.json"
# The target system's measured NCCL figure is 200 us per 42 KB allreduce: the delay must replay it.
run_step exec-model-backend-json expect_json "$LOGS/model.json" \
    '180 < d["backends"][0]["allreduce_us"] < 230 and d["backends"][0]["tok_per_s"] > 0'
run_step exec-nccl-tp1-check "$VPSIM" run configs/tiny.yaml --device cuda --backend nccl --check --iters 3 \
    --set parallel.tp=1
for np in 2 4 8; do
    run_step "exec-cuda-mpi-check-np$np" "${MPIRUN[@]}" -np "$np" "$VPSIM" run configs/tiny.yaml --device cuda \
        --backend mpi --check --iters 3
done
run_step exec-check-catches-corruption expect_exit 1 "${MPIRUN[@]}" -np 2 "$VPSIM" run configs/tiny.yaml \
    --device cuda --backend mpi --check --iters 1 --debug-corrupt-rank 1
