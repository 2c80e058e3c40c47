#!/usr/bin/env bash
# Attention launch settings on a GPU machine. First every attention case validated with each kernel of
# VALIDATE_KERNELS (--attn-kernel: 1 general, 2 MLA) at the device's shared memory and at sm_120's
# 99 KB, and compute-sanitizer's SANITIZERS on RACE_CASES where the tool exists; then every case of ATTN_CASES validated and timed at
# every setting of ATTN_SWEEP (vpsim-kernel-tests --attn-sweep, one CPU reference per case); then the
# per-block timeline (--kernel probe) of PROBE_CASE at each setting of PROBE_SETTINGS. Settings are
# TILE:STAGES:SPLITS[:KERNEL], 0 = automatic. Run from the repository root on the device machine with
# build/vpsim-kernel-tests carried; output under OUT.
#   ATTN_CASES="mla-8k mla-32k" ATTN_SWEEP="0:0:0,32:4:0" FLUSHES="dirty clean" bash bench/attn_sweep.sh
set -uo pipefail
OUT=${OUT:-/tmp/attn-sweep}
KT=${KT:-build/vpsim-kernel-tests}
ATTN_CASES=${ATTN_CASES-"mla-8k mla-32k mla-128k"}  # empty: no sweep; substrings: also the -h16 (TP=4) and -q1/-q8 cases
ATTN_SWEEP=${ATTN_SWEEP:-"0:0:0,16:4:0,32:4:0,32:3:0,16:3:0,32:2:0,16:4:64,32:4:64,64:2:64,16:4:256,32:2:256"}
ATTN_ITERS=${ATTN_ITERS:-50}
PROBE_CASE=${PROBE_CASE:-mla-8k}
PROBE_SETTINGS=${PROBE_SETTINGS:-"0:0:0 16:4:0"}
FLUSHES=${FLUSHES:-dirty}        # the timed runs' L2 flush: dirty (memset) and/or clean (read)
PROBE_FLUSH=${PROBE_FLUSH:-dirty}
VALIDATE_KERNELS=${VALIDATE_KERNELS:-}
RACE_CASES=${RACE_CASES:-}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$OUT/gpu.txt" 2>&1
for kn in $VALIDATE_KERNELS; do
    for budget in 0 101376; do
        echo "== validate kernel=$kn smem_budget=$budget" >>"$OUT/validate.txt"
        "$KT" --kernel attention --no-bench --attn-kernel "$kn" $([ "$budget" != 0 ] && echo --smem-budget $budget) >>"$OUT/validate.txt" 2>&1
        echo "rc=$?" >>"$OUT/validate.txt"
    done
    for c in $RACE_CASES; do
        if command -v compute-sanitizer >/dev/null; then
            for tool in ${SANITIZERS:-racecheck}; do
                echo "== $tool kernel=$kn case=$c" >>"$OUT/validate.txt"
                compute-sanitizer --tool "$tool" "$KT" --kernel attention --case "$c" --no-bench \
                    --attn-kernel "$kn" >>"$OUT/validate.txt" 2>&1
                echo "rc=$?" >>"$OUT/validate.txt"
            done
        fi
    done
done
[ -f "$OUT/validate.txt" ] && grep -E "^== |^rc=|ok=0|ERROR SUMMARY|hazard|RACECHECK SUMMARY" "$OUT/validate.txt" | head -60
for fl in $FLUSHES; do
    for c in $ATTN_CASES; do
        "$KT" --kernel attention --case "$c" --iters "$ATTN_ITERS" --flush "$fl" --attn-sweep "$ATTN_SWEEP" 2>&1 |
            grep -E "^kernel=|error|differs" | sed "s/\$/ flush=$fl/" >>"$OUT/sweep.txt"
    done
done
for pc in $PROBE_CASE; do
for s in $PROBE_SETTINGS; do
    IFS=: read -r t st sp kn <<<"$s"
    kn=${kn:-0}
    echo "== probe $pc tile=$t stages=$st splits=$sp kernel=$kn" >>"$OUT/probe.txt"
    args=()
    [ "$t" != 0 ] && args+=(--attn-tile "$t")
    [ "$st" != 0 ] && args+=(--attn-stages "$st")
    [ "$sp" != 0 ] && args+=(--attn-splits "$sp")
    [ "$kn" != 0 ] && args+=(--attn-kernel "$kn")
    "$KT" --kernel probe --case "$pc" --flush "$PROBE_FLUSH" "${args[@]}" >>"$OUT/probe.txt" 2>&1
done
done
# The table the reply shows: case, setting (from info), ok, median, p10, p90.
[ -s "$OUT/sweep.txt" ] && awk '{for(i=1;i<=NF;i++){split($i,kv,"="); f[kv[1]]=substr($i,length(kv[1])+2)} print f["flush"], f["case"], f["ok"], f["median_us"], f["p10_us"], f["p90_us"], f["info"]}' "$OUT/sweep.txt" |
    sed -E 's/rows_blk=[0-9]+,//; s/dv_chunks=1,//; s/mt=4,//; s/,ws=[0-9]+//'
grep -h "trace blocks" "$OUT/probe.txt" | cut -c1-260
