#!/usr/bin/env bash
# Session 12, call 4 (kind nvidia-h200): the nine held-out replays with --class-cost (a third repetition),
# then the GPU suite without its comm section (covers 50-probe.sh's new --class-cost step), final binaries.
export VPSIM=devtmp/bin/vpsim VPSIM_KERNEL_TESTS=devtmp/bin/vpsim-kernel-tests
V=$VPSIM; BASE=configs/systems/h200-1x.yaml; R=$OUT/raw; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $R/smi.txt
run() { local tag=$1; shift
  timeout 90 $V run configs/default.yaml --system $BASE --backend none --iters 30 --warmup 5 --instrumented 10 --class-cost "$@" \
     --out $R/run-$tag.json > $R/run-$tag.log 2>&1; echo "$tag rc=$? $(grep -m1 'class cost' $R/run-$tag.log)"; }
run default; run t1 --set speculative.algorithm=none; run t4 --set speculative.steps=3; run t8 --set speculative.steps=7
run ctx4k --set workload.context=4096; run ctx32k --set workload.context=32768; run ctx128k --set workload.context=131072
run tp2 --set parallel.tp=2 --set system.gpu.memory_gib=1000; run dsv3 --set model=models/deepseek-v3.yaml
t0=$(date +%s)
GPU_TEST_COMM=0 GPU_TEST_LOGS=$R/gpu-logs timeout 300 bash tests/gpu/run_gpu_tests.sh > $R/gpu.txt 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $R/gpu.txt; grep -E '^FAIL' $R/gpu.txt | head
rm -f $R/gpu-logs/*.json
cp devtmp/gpu_s12d.sh $R/
tar czf $OUT/s12d.tgz -C $OUT raw && rm -rf $R
