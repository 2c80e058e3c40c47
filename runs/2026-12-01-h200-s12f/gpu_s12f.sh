#!/usr/bin/env bash
# Session 12, call 5 (kind nvidia-h200): the GPU suite on the final tree after the review (dev_cuda now
# takes the stand-in width from plan_op_effective_n), and the default replay once for comparison.
export VPSIM=devtmp/bin/vpsim VPSIM_KERNEL_TESTS=devtmp/bin/vpsim-kernel-tests
R=$OUT/raw; mkdir -p $R
t0=$(date +%s)
GPU_TEST_COMM=0 GPU_TEST_LOGS=$R/gpu-logs timeout 300 bash tests/gpu/run_gpu_tests.sh > $R/gpu.txt 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $R/gpu.txt; grep -E '^FAIL' $R/gpu.txt | head
$VPSIM run configs/default.yaml --system configs/systems/h200-1x.yaml --backend none --iters 30 --warmup 5 --class-cost \
  --out $R/run-default.json > $R/run-default.log 2>&1; echo "default rc=$?"; grep -E "^  cycle|class cost" $R/run-default.log
rm -f $R/gpu-logs/*.json; cp devtmp/gpu_s12f.sh $R/
tar czf $OUT/s12f.tgz -C $OUT raw && rm -rf $R
