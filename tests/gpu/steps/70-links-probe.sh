# shellcheck shell=bash
# `vpsim probe` on CUDA (sourced by tests/gpu/run_gpu_tests.sh after 20-exec.sh, whose
# expect_exit it uses, with run_step, gpu_count and MPIRUN from tests/gpu/harness.sh). On one GPU: two
# virtual ranks as a self-test (the file loads and says it is one), and without --virtual the probe
# refuses (exit 2, nothing written). On two or more GPUs: a real probe of 2 ranks with the curves; the
# file loads, names its p2p mode and carries the NCCL and custom-kernel tables. Every step is bounded.
LP_TIMEOUT=${PROBE_STEP_TIMEOUT:-300}
export NCCL_NVLS_ENABLE=0 # never NVLink multicast on shared hosts (see the device notes)
LP_VIRTUAL="$LOGS/links-probe-virtual.yaml"
run_step links-probe-virtual timeout -k 10 "$LP_TIMEOUT" "${MPIRUN[@]}" -np 2 "$VPSIM" probe configs/default.yaml \
    --system configs/systems/h200-2x-nvlink.yaml --virtual --quick --out "$LP_VIRTUAL"
run_step links-probe-virtual-loads "$VPSIM" model configs/default.yaml --system "$LP_VIRTUAL"
run_step links-probe-virtual-self-test grep -c "SELF-TEST" "$LP_VIRTUAL"
# lp_refused OUT: on one GPU, 2 ranks without --virtual exit 2 and write nothing.
lp_refused() {
    rm -f "$1"
    expect_exit 2 timeout -k 10 "$LP_TIMEOUT" "${MPIRUN[@]}" -np 2 "$VPSIM" probe configs/default.yaml --quick \
        --out "$1" && [ ! -e "$1" ]
}
if [ "$(gpu_count)" -lt 2 ]; then
    run_step links-probe-refuses-without-virtual lp_refused "$LOGS/links-probe-refused.yaml"
    echo "=== links-probe-real: SKIPPED: needs 2 GPUs (found $(gpu_count))"
else
    LP_REAL="$LOGS/links-probe-2gpu.yaml"
    run_step links-probe-real timeout -k 10 "$LP_TIMEOUT" mpirun --allow-run-as-root --bind-to none \
        -x NCCL_NVLS_ENABLE=0 -np 2 "$VPSIM" probe configs/default.yaml --system configs/systems/h200-2x-nvlink.yaml \
        --out "$LP_REAL"
    run_step links-probe-real-loads "$VPSIM" model configs/default.yaml --system "$LP_REAL" --set parallel.tp=2 \
        --explain
    run_step links-probe-real-keys "$PY" - "$LP_REAL" <<'PYEOF'
# Plain text, not a YAML library (the device machine may lack one): probe writes these lines itself.
import re, sys
text = open(sys.argv[1]).read()
def check(what, ok):
    print("%s ok=%d " % (what, 1 if ok else 0))
check("paths.gpus 2", re.search(r"\n  gpus: 2  # measured: probe", text))
check("visible_us measured", re.search(r"\n  visible_us: \[0, [0-9.e+-]+, [0-9.e+-]+, 0\]  # measured", text))
m = re.search(r"\n  p2p: (direct|sysmem|off)  # measured: probe", text)
check("topology.p2p inferred: %s" % (m.group(1) if m else None), m)
for t in ["nccl", "oneshot", "twoshot", "push"]:
    check("measured.allreduce.%s in graph mode" % t,
          re.search(r"\n    " + t + r":  # measured: probe.*\n      ranks: 2\n      p2p: [a-z]+\n      launch: graph\n", text))
check("measured.allgather_nccl", re.search(r"\n  allgather_nccl:  # measured: probe", text))
check("no SELF-TEST on real GPUs", "SELF-TEST" not in text)
PYEOF
fi
