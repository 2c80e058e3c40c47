#!/usr/bin/env bash
# What a kernel costs after a kernel of another kind, on one H200 (bench/neighbour_plans.py says how and
# why). Builds nothing: VPSIM (default build/vpsim, a CUDA build) is carried. Writes ONE file,
# $OUT/neighbour-h200.tgz: the plans, each replay's results and log, table.md, smi and steps.log.
# GPU time: 20 replays of 1-122 ops, ~2 s each, about a minute in all. From the repository root:
#   bash bench/neighbour_h200.sh
set -u
OUT=${OUT:-$PWD/out-neighbour}
V=${VPSIM:-build/vpsim}
W=$(mktemp -d "${TMPDIR:-/tmp}/neighbour-h200.XXXXXX")
mkdir -p "$W/plans" "$OUT"
log() { printf '%s\n' "$*" | tee -a "$W/steps.log"; }
pack() {
    cp bench/neighbour_h200.sh bench/neighbour_plans.py "$W/"
    git rev-parse HEAD >"$W/commit.txt" 2>/dev/null
    tar -czf "$OUT/neighbour-h200.tgz" -C "$W" . && log "packed $OUT/neighbour-h200.tgz"
}
trap pack EXIT
[ -x "$V" ] || { log "no $V: carry a CUDA build"; exit 1; }
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$W/smi-before.txt" 2>&1
"$V" plan configs/default.yaml --format json >"$W/default.plan.json" || { log "vpsim plan failed"; exit 1; }
python3 bench/neighbour_plans.py make "$W/default.plan.json" "$W/plans" | tee -a "$W/steps.log"
for p in "$W"/plans/*.json; do
    case $p in *.result.json) continue ;; esac
    b=${p%.json}
    timeout 60 "$V" run configs/default.yaml --set speculative.algorithm=none --backend none --iters 50 \
        --warmup 5 --plan "$p" --out "$b.result.json" >"$b.log" 2>&1
    log "  rc=$? $(basename "$b")"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$W/smi-after.txt" 2>&1
python3 bench/neighbour_plans.py read "$W/plans" | tee "$W/table.md" | tee -a "$W/steps.log"
