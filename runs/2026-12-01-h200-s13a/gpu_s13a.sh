#!/usr/bin/env bash
# Session 13, call 1 (kind nvidia-h200): the merged tree with --p2p sysmem (h-sysmem) and the link-quantity
# model: the GPU suite (with 60-sysmem.sh on virtual ranks), then the comm quick sections at np 2.
export VPSIM=devtmp/bin/vpsim VPSIM_KERNEL_TESTS=devtmp/bin/vpsim-kernel-tests NCCL_NVLS_ENABLE=0
R=$OUT/raw; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu-state.txt 2>&1
t0=$(date +%s)
GPU_TEST_COMM=0 GPU_TEST_LOGS=$R/gpu-logs timeout 330 bash tests/gpu/run_gpu_tests.sh > $R/gpu.txt 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $R/gpu.txt; grep -E '^FAIL|FAIL' $R/gpu.txt | head -20
t0=$(date +%s)
COMM_TEST_QUICK=1 COMM_TEST_RANKS=2 COMM_TEST_SECTIONS="check b2b run fusion split" timeout 200 bash tests/gpu/run_comm_tests.sh > $R/comm.txt 2>&1
echo "comm rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $R/comm.txt; grep -E 'FAIL' $R/comm.txt | head -10
rm -f $R/gpu-logs/*.json; cp devtmp/gpu_s13a.sh $R/
tar czf $OUT/s13a.tgz -C $OUT raw && rm -rf $R
