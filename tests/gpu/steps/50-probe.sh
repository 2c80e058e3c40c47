# shellcheck shell=bash
# The compute probe (`vpsim calibrate --measure`) on CUDA (sourced by tests/gpu/run_gpu_tests.sh
# after 20-exec.sh, whose helpers it uses). The quick grid in CUDA graphs: the file loads, every class
# the default scenario uses has a law, the grouped ones at two widths, the gap is a graph's, GEMM time
# grows with the weight bytes at a fixed rows value, and model mode prices the ops by the laws.
PROBE="$LOGS/probe-quick.yaml"
run_step probe-cuda-quick "$VPSIM" calibrate --measure configs/default.yaml --system configs/systems/h200-1x.yaml \
    --device cuda --quick --passes 5 --out "$PROBE"
run_step probe-cuda-quick-laws "$PY" - "$PROBE" <<'PYEOF'
# Plain text, not a YAML library (the device machine may lack one): calibrate writes these lines itself.
import re, sys
text = open(sys.argv[1]).read()
found = re.findall(r"\n    ([a-z_]+):\n(?:      width: \[([^]]*)\]\n)?      rows: \[[^]]*\]\n      bytes: \[[^]]*\]\n"
                   r"      us: \[([^]]*)\]\n      source: \"[^\"]*graph, L2 flushed", text)
tables = {c: us for c, _, us in found}
widths = {c: sorted(set(float(w) for w in ws.split(","))) for c, ws, _ in found if ws}
# The quick grid: 4 points a class; the grouped classes 1 more from the probe's second part (the
# default's w13 and w2 at 2 x the dimension TP splits: 288 and 512), each point with its width.
for c in ["gemm_wide", "gemm_narrow", "gemm_batched", "grouped_wide", "grouped_narrow", "attention_mla",
          "attention_gqa", "norm", "elementwise", "silu_mul", "embedding"]:
    n = len(tables[c].split(",")) if c in tables else 0
    want = 5 if c.startswith("grouped") else 4
    print(f"law {c}: {n} points measured in a graph ok={int(n == want)} ")
print(f"grouped widths {widths} ok={int(widths == {'grouped_wide': [256.0, 512.0], 'grouped_narrow': [144.0, 288.0]})} ")
us = [float(v) for v in tables.get("gemm_wide", "0").split(",")]
grows = len(us) == 4 and us[1] > us[0] and us[3] > us[2]
print(f"gemm_wide time grows with bytes at each rows value: {us} ok={int(grows)} ")
card = re.search(r"\n#   card:   (GPU-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}) ", text)
print(f"the header names the card: {card.group(1) if card else None} ok={int(bool(card))} ")
gap = float(re.search(r"\n  graph_node_us: ([0-9.e+-]+)", text).group(1))
print(f"graph_node_us {gap} in (0, 20) ok={int(0 < gap < 20)} ")
PYEOF
run_step probe-cuda-model-explain bash -c "\"$VPSIM\" model configs/default.yaml --system \"$PROBE\" --backend none \
    --explain | grep -c '(probed)'"
# --class-cost on CUDA: the cycle timed again without each compute class, in a CUDA graph.
run_step exec-class-cost "$VPSIM" run configs/default.yaml --system configs/systems/h200-1x.yaml --backend none \
    --iters 10 --warmup 2 --class-cost --out "$LOGS/class-cost.json"
run_step exec-class-cost-json expect_json "$LOGS/class-cost.json" \
    '0 < d["measured"]["class_cost_ms"]["gemm"] < d["measured"]["cycle_median_ms"] and d["measured"]["class_cost_ms"]["attention"] > 0 and d["measured"]["class_cost_ms"]["other"] > 0'
