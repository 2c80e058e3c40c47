#!/usr/bin/env bash
# Issue #26 on one H200 (kind nvidia-h200), from the repository root: `bash bench/issue26_h200.sh`.
# Writes everything under $OUT (default ./out-issue26). GPU time, estimated from the model
# (bench/heldout_cases.py --estimate): the probe ~8 s, model-vs-run ~10 s, the 15 replays ~95 s; about
# 2 minutes of GPU in all, under 4 with the build. Nothing here is fitted: the held-out table is printed
# against the committed probed file and against the fresh one, as measured.
set -u
OUT=${OUT:-$PWD/out-issue26}; mkdir -p "$OUT/heldout"
V=build/vpsim
[ -x $V ] || make -j"$(nproc)" >"$OUT/build.log" 2>&1 || { echo "build failed: $OUT/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$OUT/smi-before.txt" 2>&1
t() { local t0=$SECONDS; "$@"; local rc=$?; printf '  rc=%d %ds: %s\n' $rc $((SECONDS - t0)) "$*" | cut -c1-200; return $rc; }

echo "== 1. calibrate --measure on the default scenario (its base names the RTX PRO 6000): expect exit 2 and why"
t $V calibrate --measure configs/default.yaml --out "$OUT/f-default-base.yaml" >"$OUT/measure-default.log" 2>&1
tail -2 "$OUT/measure-default.log"
echo "== 1b. the same on the H200's own base: an H200 file (gpu section from the device)"
t timeout 240 $V calibrate --measure configs/default.yaml --system configs/systems/h200-1x.yaml --out "$OUT/f.yaml" \
    >"$OUT/measure-h200.log" 2>&1
head -8 "$OUT/f.yaml"; grep -E '^  (name|sms|memory_gib|cc):' "$OUT/f.yaml"
echo "== 1c. model --system f.yaml against run on the default scenario (one GPU, --backend none)"
t timeout 120 $V run configs/default.yaml --system configs/systems/h200-1x.yaml --backend none --iters 30 --warmup 5 \
    --out "$OUT/run-default.json" >"$OUT/run-default.log" 2>&1
t $V model configs/default.yaml --system "$OUT/f.yaml" --backend none --format json --out "$OUT/model-default.json" >/dev/null
python3 - "$OUT" <<'PY'
import json, sys
o = sys.argv[1]
r = json.load(open(o + "/run-default.json"))["measured"]["cycle_median_ms"]
b = json.load(open(o + "/model-default.json"))["backends"][0]
m = b["cycle_ms"] - b["host_ms"]
print(f"  default cycle: run {r:.3f} ms, model (f.yaml) {m:.3f} ms: {100 * (m - r) / r:+.1f} % (bound 5 %)")
PY
echo "== 1d. the committed probed file's tables against this machine's (second machine of the kind)"
python3 bench/probe_repeat.py configs/systems/h200-1x-probed.yaml "$OUT/f.yaml" | tee "$OUT/probe-repeat.txt"

echo "== 2. the held-out replays (bench/heldout_cases.py)"
for c in $(python3 bench/heldout_cases.py --list | awk '{print $1}'); do
    mapfile -t S < <(python3 bench/heldout_cases.py --sets "$c")
    t timeout 90 $V run configs/default.yaml --system configs/systems/h200-1x-probed.yaml --backend none --iters 20 \
        --warmup 3 --instrumented 3 --class-cost "${S[@]}" --out "$OUT/heldout/run-$c.json" >"$OUT/heldout/run-$c.log" 2>&1
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$OUT/smi-after.txt" 2>&1
echo "== 3. model against replay"
python3 bench/heldout.py "$OUT/heldout" configs/systems/h200-1x-probed.yaml --json "$OUT/heldout-probed.json" \
    | tee "$OUT/heldout-probed.md"
[ -s "$OUT/f.yaml" ] && python3 bench/heldout.py "$OUT/heldout" "$OUT/f.yaml" --json "$OUT/heldout-fresh.json" \
    | tee "$OUT/heldout-fresh.md"
cp bench/issue26_h200.sh "$OUT/"
