#!/usr/bin/env bash
# Session 11, call 1 (nvidia-h200-x2): the GPU suite (kernels incl. the fused allreduce+norm kernels,
# executor steps incl. two-batch overlap), then the comm sections of the new #12 items at np 2.
export NCCL_NVLS_ENABLE=0 VPSIM=devtmp/bin/vpsim VPSIM_KERNEL_TESTS=devtmp/bin/vpsim-kernel-tests
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
nvidia-smi topo -m | head -4
t0=$(date +%s)
GPU_TEST_COMM=0 GPU_TEST_LOGS=$OUT/gpu-logs timeout ${MAIN_S:-260} bash tests/gpu/run_gpu_tests.sh > $OUT/gpu.txt 2>&1
echo "main rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $OUT/gpu.txt; grep -E '^FAIL' $OUT/gpu.txt | head -20
t1=$(date +%s)
COMM_TEST_QUICK=1 COMM_TEST_RANKS="2" COMM_TEST_SECTIONS="${SECTIONS:-fusion split ep}" COMM_TEST_LOGS=$OUT/comm-logs \
  COMM_TEST_STEP_TIMEOUT=90 timeout ${COMM_S:-240} bash tests/gpu/run_comm_tests.sh > $OUT/comm.txt 2>&1
echo "comm rc=$? in $(( $(date +%s) - t1 )) s"; grep -E '^(PASS|FAIL|SKIP)' $OUT/comm.txt | cut -c1-110; tail -1 $OUT/comm.txt
