#!/usr/bin/env bash
# Session 10, third call: the GPU suite after the review (NVML reading moved to dev_nvml.c).
export NCCL_NVLS_ENABLE=0 VPSIM=devtmp/bin/vpsim VPSIM_KERNEL_TESTS=devtmp/bin/vpsim-kernel-tests
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
t0=$(date +%s)
GPU_TEST_COMM=0 GPU_TEST_LOGS=$OUT/gpu-logs timeout 200 bash tests/gpu/run_gpu_tests.sh > $OUT/gpu.txt 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s: $(tail -1 $OUT/gpu.txt)"; grep -E '^FAIL' $OUT/gpu.txt | head
timeout 60 $VPSIM run configs/tiny.yaml --device cuda --backend none --iters 5 --warmup 1 --out $OUT/tiny.json >/dev/null 2>&1; echo "run rc=$?"
grep -o '"gpu_state_[a-z]*": *"[^"]*"\|"gpu_clocks": *"[^"]*"' $OUT/tiny.json
