#!/usr/bin/env bash
# make bench: the speed goals of model mode:
#   - one full default cycle evaluated in <= 50 us on one core (prepare every op's cost + one backend;
#     the performance goal is <= 25 us);
#   - sweeps: rows (scenario x backend) per second at --jobs 1 and 2, the CSVs compared; the goal is
#     1,000,000 rows in <= 60 s on 2 cores.
# Usage: VPSIM=build/vpsim bash bench/run_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VPSIM=${VPSIM:-build/vpsim}
tmp=$(mktemp -d /tmp/vpsim-bench-XXXXXX)
trap 'rm -rf "$tmp"' EXIT

echo "== model: one default cycle (configs/default.yaml, 8x RTX PRO 6000 PCIe)"
out=$(taskset -c 0 "$VPSIM" model configs/default.yaml --bench 20000 2>/dev/null || "$VPSIM" model configs/default.yaml --bench 20000)
echo "$out"
one=$(echo "$out" | sed -n 's/.*backend nccl: \([0-9.]*\) us.*/\1/p')
verdict=$(awk -v t="$one" 'BEGIN { print (t <= 50.0) ? "ok" : "SLOW" }')
echo "goal: <= 50 us per cycle on one core: $verdict ($one us)"

echo
# One sweep timed at --jobs 1 and --jobs 2; rows are scenario-backend rows of the CSV.
timed_sweep() { # LABEL JOBS CSV ARGS...
    local label=$1 jobs=$2 csv=$3; shift 3
    local start end
    start=$(date +%s.%N)
    "$VPSIM" sweep configs/default.yaml "$@" --jobs "$jobs" --restart --out "$csv" > /dev/null
    end=$(date +%s.%N)
    local rows=$(($(wc -l < "$csv") - 1))
    awk -v s="$start" -v e="$end" -v n="$rows" -v j="$jobs" -v l="$label" \
        'BEGIN { t = e - s; printf "sweep %s, --jobs %d: %d rows in %.2f s = %.0f rows/s\n", l, j, n, t, n / t }'
}

echo "== sweep: 10,000 scenarios x 1 backend (4 keys x 10 values; YAML reloaded per scenario, plans cached)"
vals() { seq -s, "$1" "$2" "$3"; }
grid=(--vary workload.context=$(vals 1024 1024 10240) --vary system.links.socket_gbs=$(vals 10 10 100)
      --vary system.links.pcie_lat_us=$(vals 0.1 0.1 1.0) --vary system.gpu.mem_efficiency=$(vals 0.5 0.05 0.95))
timed_sweep "10,000 x nccl" 1 "$tmp/sweep1.csv" "${grid[@]}" --backend nccl
timed_sweep "10,000 x nccl" 2 "$tmp/sweep2.csv" "${grid[@]}" --backend nccl
cmp -s "$tmp/sweep1.csv" "$tmp/sweep2.csv" && echo "  the two CSVs are identical" || echo "  the two CSVs DIFFER"
echo
echo "== sweep: 10,000 scenarios x all 7 backends (70,000 rows: the 1,000,000-row goal is <= 60 s on 2 cores)"
timed_sweep "10,000 x 7 backends" 2 "$tmp/sweep7all.csv" "${grid[@]}"

echo
echo "== sweep: 1,000 scenarios x all 7 backends"
start=$(date +%s.%N)
"$VPSIM" sweep configs/default.yaml \
    --vary system.topology.p2p=direct,sysmem,off,direct,sysmem,off,direct,sysmem,off,direct \
    --vary system.links.socket_gbs=$(vals 10 10 100) \
    --vary speculative.acceptance=[0.9,0.8],[0.8,0.7],[0.8,0.6],[0.7,0.6],[0.7,0.5],[0.6,0.5],[0.6,0.4],[0.5,0.4],[0.5,0.3],[0.4,0.3] \
    --out "$tmp/sweep7.csv"
end=$(date +%s.%N)
rows=$(($(wc -l < "$tmp/sweep7.csv") - 1))
awk -v s="$start" -v e="$end" -v n="$rows" \
    'BEGIN { t = e - s; printf "sweep: %d scenarios in %.2f s = %.0f scenarios/s (%d rows)\n", n / 7, t, n / 7 / t, n }'

echo
echo "== --class-cost on the CPU device (tiny scenario): leaving GEMMs or attention out must shorten the cycle"
"$VPSIM" run configs/tiny.yaml --device cpu --backend none --iters 15 --warmup 2 --class-cost --out "$tmp/cc.json" \
    > /dev/null 2>&1
python3 - "$tmp/cc.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))["measured"]
c = m["class_cost_ms"]
ok = c["gemm"] > 0 and c["attention"] > 0 and c["gemm"] < m["cycle_p90_ms"] and c["attention"] < m["cycle_p90_ms"]
print("class cost: gemm %.3f attention %.3f other %.3f of a %.3f ms cycle: %s"
      % (c["gemm"], c["attention"], c["other"], m["cycle_median_ms"], "ok" if ok else "NOISY (rerun on an idle machine)"))
PY
