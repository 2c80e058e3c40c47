#!/usr/bin/env bash
# Session 10 device call: the GPU suite on the merged tree, the comm quick section at np 2 (virtual ranks on
# one GPU: protocol, not timing), and the new CLI paths on a real GPU.
export NCCL_NVLS_ENABLE=0 VPSIM=devtmp/bin/vpsim VPSIM_KERNEL_TESTS=devtmp/bin/vpsim-kernel-tests
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv
git log --oneline -1 2>/dev/null
t0=$(date +%s)
GPU_TEST_COMM=0 GPU_TEST_LOGS=$OUT/gpu-logs timeout ${MAIN_S:-300} bash tests/gpu/run_gpu_tests.sh > $OUT/gpu.txt 2>&1
echo "main rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $OUT/gpu.txt; grep -E '^FAIL' $OUT/gpu.txt | head
t1=$(date +%s)
COMM_TEST_QUICK=1 COMM_TEST_RANKS="2" COMM_TEST_SECTIONS="${SECTIONS:-check b2b run policy json}" COMM_TEST_LOGS=$OUT/comm-logs \
  timeout ${COMM_S:-200} bash tests/gpu/run_comm_tests.sh > $OUT/comm.txt 2>&1
echo "comm rc=$? in $(( $(date +%s) - t1 )) s"; grep -E '^(PASS|FAIL|SKIP)' $OUT/comm.txt | cut -c1-100; tail -1 $OUT/comm.txt
echo "--- bench-allreduce with nccl-tests spellings, csv, on the GPU (np 1)"
timeout 60 $VPSIM bench-allreduce --backend nccl,oneshot -c 1 -G 1 -d bfloat16 --iters 20 --format csv 2>&1 | head -8; echo "rc=${PIPESTATUS[0]}"
echo "--- --backend all on cuda (np 1)"
timeout 60 $VPSIM bench-allreduce --backend all --iters 10 2>&1 | tail -12; echo "rc=${PIPESTATUS[0]}"
echo "--- run: the device probe passes on a GPU; default scenario, graph"
timeout 120 $VPSIM run configs/default.yaml --system configs/systems/h200-1x.yaml --backend none --iters 20 --warmup 5 --out $OUT/run-none.json 2>&1 | tail -6; echo "rc=${PIPESTATUS[0]}"
echo "--- plan memory vs the device (the replay holds only what one cycle reads)"
$VPSIM plan configs/default.yaml --system configs/systems/h200-1x.yaml | grep "memory per rank"
