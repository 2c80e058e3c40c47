#!/usr/bin/env bash
# Replays of plans that a bench/*_plans.py maker writes, on one H200: bench/neighbour_plans.py (what a
# kernel costs after another kind) or bench/class_plans.py (the classes' marginal and standalone costs),
# each of which says how and why. Builds nothing: VPSIM (default build/vpsim, a CUDA build) is carried.
# Writes ONE file, $OUT/plans-h200.tgz: the plans, each replay's results and log, table-*.md, smi and
# steps.log. GPU time: ~2 s a plan (neighbour 20 plans, class 8 a case). From the repository root:
#   bash bench/plans_h200.sh neighbour_plans
#   bash bench/plans_h200.sh class_plans [CASE ...]     (bench/heldout_cases.py names; default anchor)
# EXTRA (words added to every replay's command line), e.g. EXTRA=--class-cost: each plan also measures
# its classes alone by skipping ops (vpsim run --class-cost), beside the plans that leave them out.
# ONLY (plan names, e.g. ONLY="no-AO no-GO no-GA no-GAO": each class alone and none) replays only those;
# the maker's `read` then needs its full set, so it is left out (bench/heldout.py --plans reads them).
set -u
MAKER=${1:?usage: bench/plans_h200.sh neighbour_plans|class_plans [CASE ...]}
shift
OUT=${OUT:-$PWD/out-plans}
V=${VPSIM:-build/vpsim}
W=$(mktemp -d "${TMPDIR:-/tmp}/plans-h200.XXXXXX")
mkdir -p "$OUT"
log() { printf '%s\n' "$*" | tee -a "$W/steps.log"; }
pack() {
    cp bench/plans_h200.sh bench/plans_cli.py "bench/$MAKER.py" "$W/"
    # The binary says what it was built from; the device's copy of the tree has no history of its own.
    "$V" --version >"$W/commit.txt" 2>&1
    git rev-parse HEAD >>"$W/commit.txt" 2>/dev/null
    tar -czf "$OUT/plans-h200.tgz" -C "$W" . && log "packed $OUT/plans-h200.tgz"
}
trap pack EXIT
[ -x "$V" ] || { log "no $V: carry a CUDA build"; exit 1; }
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$W/smi-before.txt" 2>&1
# The neighbour plans are one decode phase of the default's ops; the class plans keep the case's cycle.
[ "$MAKER" = neighbour_plans ] && set -- neighbour
[ $# -gt 0 ] || set -- anchor
for c in "$@"; do
    S=()
    if [ "$c" = neighbour ]; then
        R=(--set speculative.algorithm=none)
    else
        mapfile -t S < <(python3 bench/heldout_cases.py --sets "$c")
        R=("${S[@]}")
    fi
    D="$W/$c"
    mkdir -p "$D"
    "$V" plan configs/default.yaml "${S[@]}" --format json >"$D/plan.json" || { log "$c: vpsim plan failed"; continue; }
    python3 "bench/$MAKER.py" make "$D/plan.json" "$D/plans" | tr '\n' ' ' | tee -a "$W/steps.log"
    log ""
    for p in "$D"/plans/*.json; do
        case $p in *.result.json) continue ;; esac
        if [ -n "${ONLY:-}" ]; then
            case " $ONLY " in *" $(basename "$p" .json) "*) ;; *) continue ;; esac
        fi
        b=${p%.json}
        timeout 60 "$V" run configs/default.yaml "${R[@]}" --backend none --iters 50 --warmup 5 ${EXTRA:-} --plan "$p" \
            --out "$b.result.json" >"$b.log" 2>&1
        log "  rc=$? $c $(basename "$b")"
    done
    [ -n "${ONLY:-}" ] || python3 "bench/$MAKER.py" read "$D/plans" | tee "$W/table-$c.md" | tee -a "$W/steps.log"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv >"$W/smi-after.txt" 2>&1
