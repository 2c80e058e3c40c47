#!/usr/bin/env bash
# Session 13, call 4 (kind nvidia-h200): the reviewed tree (shared memory through sim/dist/dist_shm for
# --p2p sysmem and the link probe; NVML loaded in one place): the GPU suite, and the probe once at np 1.
export VPSIM=devtmp/bin/vpsim VPSIM_KERNEL_TESTS=devtmp/bin/vpsim-kernel-tests NCCL_NVLS_ENABLE=0
R=$OUT/raw; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu-state.txt 2>&1
t0=$(date +%s)
GPU_TEST_COMM=0 GPU_TEST_LOGS=$R/gpu-logs timeout 300 bash tests/gpu/run_gpu_tests.sh > $R/gpu.txt 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $R/gpu.txt; grep -E '^FAIL' $R/gpu.txt | head -20
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 1 $VPSIM probe configs/default.yaml \
  --system configs/systems/h200-1x.yaml --no-curves --out $R/h200-np1.yaml > $R/probe-np1.txt 2>&1
echo "probe np1 rc=$?"; grep -E "host_|memcpy|graph_node" $R/h200-np1.yaml | grep measured | cut -c1-110
ls /dev/shm | grep -c vpsim
rm -f $R/gpu-logs/*.json; cp devtmp/gpu_s13d.sh $R/
tar czf $OUT/s13d.tgz -C $OUT raw && rm -rf $R
