#!/usr/bin/env bash
# Issue #26 item 3 on one H200 (kind nvidia-h200): the probe with this tree's grid, the 15 held-out
# replays, and bench/heldout.py against the committed probed file and the fresh one. Builds nothing:
# VPSIM (default build/vpsim, a CUDA build) is carried. Everything lands in ONE tar file,
# $OUT/law-h200.tgz (the device returns a few files only). From the repository root:
#   bash bench/law_h200.sh
# GPU time, estimated (bench/NOTES.md 2026-12-02: the probe 6 s, the replays 66 s): the probe's two parts
# 10-40 s (1,273 ops on 105.1 GiB, then 197 ops on 33 GiB of private weights and caches to fill), the
# replays ~70 s, the two models on the host ~10 s: about 2-3 minutes; every step has its own timeout,
# the whole stays under 7 minutes. The SM clock is sampled through the probe and the replays.
# Nothing here is fitted: both tables are printed as measured (bench/heldout.py).
set -u
OUT=${OUT:-$PWD/out-law}
V=${VPSIM:-build/vpsim}
BASE=${BASE:-configs/systems/h200-1x.yaml}
COMMITTED=${COMMITTED:-configs/systems/h200-1x-probed.yaml}
W=$(mktemp -d "${TMPDIR:-/tmp}/law-h200.XXXXXX")
mkdir -p "$W/heldout" "$W/repeat" "$OUT"
S0=$SECONDS
log() { printf '%s\n' "$*" | tee -a "$W/steps.log"; }
t() { local t0=$SECONDS; "$@"; local rc=$?; log "  rc=$rc $((SECONDS - t0))s: $(printf '%s ' "$@" | cut -c1-180)"; return $rc; }
pack() {
    cp bench/law_h200.sh "$W/"
    # The binary says what it was built from; the device's copy of the tree has no history of its own.
    "$V" --version >"$W/commit.txt" 2>&1
    git rev-parse HEAD >>"$W/commit.txt" 2>/dev/null
    git status --short >>"$W/commit.txt" 2>/dev/null
    tar -czf "$OUT/law-h200.tgz" -C "$W" . && log "packed $OUT/law-h200.tgz ($((SECONDS - S0)) s in all)"
}
trap 'clocks; pack' EXIT

[ -x "$V" ] || { log "no $V: carry a CUDA build (make -j2 on the CPU machine, carry build/vpsim)"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv \
    >"$W/smi-before.txt" 2>&1
# Which card this is (a second machine of the kind is told apart by these), and its clocks sampled every
# 100 ms while the probe and the replays run: a kernel bound by issue or latency runs at the SM clock it
# is given, and the probe's short graphs and the replay's long cycles need not be given the same one.
nvidia-smi --query-gpu=name,uuid,serial,pci.bus_id,vbios_version,power.limit,clocks.max.sm --format=csv \
    >"$W/gpu-identity.txt" 2>&1
SMI_PID=
clocks() {
    [ -n "$SMI_PID" ] && kill "$SMI_PID" 2>/dev/null && wait "$SMI_PID" 2>/dev/null
    SMI_PID=
    [ -n "${1:-}" ] || return 0
    nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv,noheader \
        -lms 100 >"$W/clocks-$1.csv" 2>&1 &
    SMI_PID=$!
}

log "== 1. the probe, this tree's grid (grouped to all experts, MLA 24 rows and 256k/512k)"
clocks probe
t timeout 200 "$V" calibrate --measure configs/default.yaml --system "$BASE" --out "$W/fresh.yaml" \
    >"$W/probe.log" 2>&1
clocks
tail -18 "$W/probe.log" | tee -a "$W/steps.log"

log "== 2. the held-out replays (bench/heldout_cases.py: 15 cases, the same options as 2026-12-02-h200-s16b)"
clocks replays
for c in $(python3 bench/heldout_cases.py --list | awk '{print $1}'); do
    mapfile -t S < <(python3 bench/heldout_cases.py --sets "$c")
    t timeout 60 "$V" run configs/default.yaml --system "$COMMITTED" --backend none --iters 20 --warmup 3 \
        --instrumented 3 --class-cost "${S[@]}" --out "$W/heldout/run-$c.json" >"$W/heldout/run-$c.log" 2>&1
done
# The same cases again, twice each: how far a case's class costs move from call to call (the class
# cost's rounds now alternate the cycle with and without the class).
for rep in 2 3; do
    for c in anchor k-b16-tp8-4k d-b4-tp4-topk2-32k; do
        mapfile -t S < <(python3 bench/heldout_cases.py --sets "$c")
        t timeout 60 "$V" run configs/default.yaml --system "$COMMITTED" --backend none --iters 20 --warmup 3 \
            --instrumented 3 --class-cost "${S[@]}" --out "$W/repeat/run-$c-$rep.json" >"$W/repeat/run-$c-$rep.log" 2>&1
    done
done
clocks
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$W/smi-after.txt" 2>&1
nvidia-smi -q -d PERFORMANCE >>"$W/smi-after.txt" 2>&1

log "== 3. model against replay: the committed probed file (old grid, this tree's laws), then the fresh probe"
python3 bench/heldout.py "$W/heldout" "$COMMITTED" --vpsim "$V" --json "$W/heldout-committed.json" \
    >"$W/heldout-committed.md" 2>&1
tee -a "$W/steps.log" <"$W/heldout-committed.md"
if [ -s "$W/fresh.yaml" ]; then
    python3 bench/heldout.py "$W/heldout" "$W/fresh.yaml" --vpsim "$V" --json "$W/heldout-fresh.json" \
        >"$W/heldout-fresh.md" 2>&1
    tee -a "$W/steps.log" <"$W/heldout-fresh.md"
    python3 bench/probe_repeat.py "$COMMITTED" "$W/fresh.yaml" >"$W/probe-repeat.txt" 2>&1
fi
