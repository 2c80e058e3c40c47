#!/usr/bin/env bash
# Session 12, call 2 (nvidia-h200-x2): the probe again (GEMM points at the scenario's own shapes, grouped
# at its per-expert shapes), then `make test-gpu` on the final tree: the suite without its comm section,
# then the comm sections touched by this session's mends (begin_call, push_line) at np 2.
export NCCL_NVLS_ENABLE=0 VPSIM=devtmp/bin/vpsim VPSIM_KERNEL_TESTS=devtmp/bin/vpsim-kernel-tests
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
R=$OUT/raw; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $R/smi.txt
t0=$(date +%s)
timeout 120 $VPSIM calibrate --measure configs/default.yaml --system configs/systems/h200-1x.yaml --out $R/h200-1x-probed.yaml > $R/probe.log 2>&1
echo "probe rc=$? $(( $(date +%s) - t0 ))s"; tail -14 $R/probe.log
t0=$(date +%s)
GPU_TEST_COMM=0 GPU_TEST_LOGS=$R/gpu-logs timeout 300 bash tests/gpu/run_gpu_tests.sh > $R/gpu.txt 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $R/gpu.txt; grep -E '^FAIL' $R/gpu.txt | head -20
t1=$(date +%s)
COMM_TEST_QUICK=1 COMM_TEST_RANKS="2" COMM_TEST_SECTIONS="check b2b run fusion split ep" COMM_TEST_LOGS=$R/comm-logs \
  COMM_TEST_STEP_TIMEOUT=90 timeout 200 bash tests/gpu/run_comm_tests.sh > $R/comm.txt 2>&1
echo "comm rc=$? in $(( $(date +%s) - t1 )) s"; grep -E '^FAIL' $R/comm.txt | cut -c1-110; tail -1 $R/comm.txt
rm -rf $R/gpu-logs/*.json 2>/dev/null
cp devtmp/gpu_s12b.sh $R/
tar czf $OUT/s12b.tgz -C $OUT raw && rm -rf $R
