#!/usr/bin/env bash
# The measurement program on a machine with one GPU per rank (2 GPUs, as the nvidia-h200-x2 kind lends them).
# Writes JSON under OUTDIR (default build/measure-np$NP) and a log; prints a short summary last.
#
#   1. vpsim bench-allreduce, every backend, 16 B .. 64 MiB (+ the verify payload), --check, as CUDA
#      graphs and eager, each row beside the model of SYSTEM (--model); then REPEATS more sweeps over
#      three sizes, for the spread between runs;
#   2. NCCL alone with NCCL_P2P_DISABLE=1 (through host memory), and with NCCL_SHM_DISABLE=1 as well,
#      graph and eager;
#   3. vpsim run configs/default.yaml at TP=NP per backend, graph and eager (--system SYSTEM);
#   4. nccl-tests' all_reduce_perf on the same machine (when NCCL_TESTS points at a build made with
#      MPI=1), eager and graph (-G), P2P on and off: the field's own figure beside vpsim's.
#
# Usage: VPSIM=build/vpsim NCCL_TESTS=.nccl-tests/build bash bench/measure_multi_gpu.sh [OUTDIR]
# Knobs: NP (2), SYSTEM (configs/systems/h200-2x-nvlink.yaml), ITERS (50), RUN_ITERS (20),
# REPEATS (3), SECTIONS ("bench spread p2p run nccltests").
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
NP=${NP:-2}
OUTDIR=${1:-build/measure-np$NP}
VPSIM=${VPSIM:-build/vpsim}
NCCL_TESTS=${NCCL_TESTS:-}
SYSTEM=${SYSTEM:-configs/systems/h200-2x-nvlink.yaml}
ITERS=${ITERS:-50}
RUN_ITERS=${RUN_ITERS:-20}
REPEATS=${REPEATS:-3}
SECTIONS=" ${SECTIONS:-bench spread p2p run nccltests} "
want() { [[ "$SECTIONS" == *" $1 "* ]]; }
mkdir -p "$OUTDIR"
LOG="$OUTDIR/measure.log"
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M=(mpirun -np "$NP" --allow-run-as-root --bind-to none -x NCCL_NVLS_ENABLE)
fails=0

# step NAME SECONDS COMMAND...: run bounded, log everything, count a failure (and go on) on non-zero.
step() {
    local name=$1 secs=$2 rc t0
    shift 2
    t0=$(date +%s)
    echo "=== $name: $*" >>"$LOG"
    timeout -k 10 "$secs" "$@" >>"$LOG" 2>&1
    rc=$?
    echo "=== $name: exit $rc after $(($(date +%s) - t0)) s" | tee -a "$LOG"
    [ "$rc" -eq 0 ] || fails=$((fails + 1))
}

{
    date -u +"date: %Y-%m-%dT%H:%M:%SZ"
    nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
    nvidia-smi topo -m
    mpirun --version | head -1
} >"$OUTDIR/machine.txt" 2>&1

if want bench; then
    for mode in graph eager; do
        flag=$([ "$mode" = graph ] && echo --graph)
        step "bench-$mode" 420 "${M[@]}" "$VPSIM" bench-allreduce configs/default.yaml --backend all -b 16 -e 64M \
            --check -n "$ITERS" -w 10 $flag --system "$SYSTEM" --model --format json \
            --out "$OUTDIR/bench-np$NP-$mode.json"
    done
fi
if want spread; then
    for ((r = 1; r <= REPEATS; r++)); do
        for mode in graph eager; do
            flag=$([ "$mode" = graph ] && echo --graph)
            step "spread-$mode-$r" 120 "${M[@]}" "$VPSIM" bench-allreduce --backend all --sizes 4096,43008,1048576 \
                -n "$ITERS" -w 10 $flag --format json --out "$OUTDIR/spread-np$NP-$mode-$r.json"
        done
    done
fi
if want p2p; then
    for mode in graph eager; do
        flag=$([ "$mode" = graph ] && echo --graph)
        step "bench-p2p-off-$mode" 300 env NCCL_P2P_DISABLE=1 "${M[@]}" -x NCCL_P2P_DISABLE "$VPSIM" bench-allreduce \
            configs/default.yaml --backend nccl -b 16 -e 64M --check -n "$ITERS" -w 10 $flag --system "$SYSTEM" \
            --set system.topology.p2p=off --model --format json --out "$OUTDIR/bench-np$NP-p2p-off-$mode.json"
        step "bench-p2p-shm-off-$mode" 300 env NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 "${M[@]}" -x NCCL_P2P_DISABLE \
            -x NCCL_SHM_DISABLE "$VPSIM" bench-allreduce configs/default.yaml --backend nccl -b 16 -e 64M --check \
            -n "$ITERS" -w 10 $flag --system "$SYSTEM" --set system.topology.p2p=off --model --format json \
            --out "$OUTDIR/bench-np$NP-p2p-shm-off-$mode.json"
    done
fi
if want run; then
    R=("$VPSIM" run configs/default.yaml --system "$SYSTEM" --iters "$RUN_ITERS" --warmup 3)
    for b in none nccl nccl-symm oneshot twoshot push; do
        step "run-$b-graph" 240 "${M[@]}" "${R[@]}" --backend "$b" --out "$OUTDIR/run-np$NP-$b-graph.json"
    done
    for b in none nccl oneshot mpi; do
        step "run-$b-eager" 240 "${M[@]}" "${R[@]}" --backend "$b" --eager --out "$OUTDIR/run-np$NP-$b-eager.json"
    done
    step "run-nccl-p2p-off-graph" 240 env NCCL_P2P_DISABLE=1 "${M[@]}" -x NCCL_P2P_DISABLE "${R[@]}" --backend nccl \
        --set system.topology.p2p=off --out "$OUTDIR/run-np$NP-nccl-p2p-off-graph.json"
fi
if want nccltests; then
    if [ -n "$NCCL_TESTS" ] && [ -x "$NCCL_TESTS/all_reduce_perf" ]; then
        NT=("$NCCL_TESTS/all_reduce_perf" -b 16 -e 64M -f 2 -g 1 -d bfloat16 -n "$ITERS" -w 10)
        step nccltests-eager 240 "${M[@]}" "${NT[@]}"
        step nccltests-graph 240 "${M[@]}" "${NT[@]}" -G "$ITERS"
        step nccltests-p2p-off-eager 240 env NCCL_P2P_DISABLE=1 "${M[@]}" -x NCCL_P2P_DISABLE "${NT[@]}"
        step nccltests-p2p-off-graph 240 env NCCL_P2P_DISABLE=1 "${M[@]}" -x NCCL_P2P_DISABLE "${NT[@]}" -G "$ITERS"
    else
        echo "=== nccltests: skipped (set NCCL_TESTS to a build of NVIDIA/nccl-tests made with MPI=1)" | tee -a "$LOG"
    fi
fi

# Summary: the verify payload and the run cycles.
python3 - "$OUTDIR" <<'EOF' || true
import glob, json, os, sys
d = sys.argv[1]
for f in sorted(glob.glob(os.path.join(d, "bench-*.json"))):
    j = json.load(open(f))
    for b in j["backends"]:
        rows = {r["bytes"]: r for r in b.get("rows", [])}
        r = rows.get(43008)
        if r:
            m = r.get("model_us")
            print(f"{os.path.basename(f):32s} {b['name']:10s} 43008 B {r['time_us']:8.2f} us wrong {r['wrong']}"
                  + (f"  model {m:8.2f} us" if m is not None else ""))
spread = {}
for f in sorted(glob.glob(os.path.join(d, "spread-*.json"))):
    j = json.load(open(f))
    mode = "graph" if j["graph_requested"] else "eager"
    for b in j["backends"]:
        for r in b.get("rows", []):
            spread.setdefault((mode, b["name"], r["bytes"]), []).append(r["time_us"])
for (mode, name, size), v in sorted(spread.items()):
    v = sorted(v)
    print(f"spread {mode:5s} {name:10s} {size:8d} B  median {v[len(v) // 2]:8.2f}  min {v[0]:8.2f}  max {v[-1]:8.2f}  (n={len(v)})")
for f in sorted(glob.glob(os.path.join(d, "run-*.json"))):
    j = json.load(open(f))
    b = j["backends"][0]
    print(f"{os.path.basename(f):36s} cycle {b['cycle_ms']:7.3f} ms  allreduce {b['allreduce_us']:7.2f} us  tok/s {b['tok_per_s']:6.1f}")
EOF
echo "measure_multi_gpu: $fails step(s) failed; outputs in $OUTDIR"
[ "$fails" -eq 0 ]
