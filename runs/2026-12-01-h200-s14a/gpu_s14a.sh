#!/usr/bin/env bash
# Session 14, call 1 (kind nvidia-h200): the target-box session's tree (NCCL rules, peer modes, arrival
# skew, the probe's new readings) on one H200: the GPU suite (make test-gpu's recipe, comm section left
# out: kernels unchanged), the probe at np 1 with curves (NCCL's INFO log read back), and the probe on
# two virtual ranks (the eager-spread and all-GPU host-load steps, a protocol self-test).
# Run from the repository root with build/ carried: bash bench/runs/2026-12-01-h200-s14a/gpu_s14a.sh
export VPSIM=build/vpsim VPSIM_KERNEL_TESTS=build/vpsim-kernel-tests NCCL_NVLS_ENABLE=0
R=$OUT/raw; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu-state.txt 2>&1
lscpu | grep -E "Model name|Socket|NUMA node\(s\)" > $R/host.txt 2>&1
t0=$(date +%s)
GPU_TEST_COMM=0 GPU_TEST_LOGS=$R/gpu-logs timeout 300 bash tests/gpu/run_gpu_tests.sh > $R/gpu.txt 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $R/gpu.txt; grep -E '^FAIL' $R/gpu.txt | head -20
t0=$(date +%s)
mpirun --allow-run-as-root --oversubscribe --bind-to none -np 1 $VPSIM probe configs/default.yaml \
  --system configs/systems/h200-1x.yaml --quick --out $R/h200-np1.yaml > $R/probe-np1.txt 2>&1
echo "probe np1 rc=$? in $(( $(date +%s) - t0 )) s"
grep -E "NCCL's own log|Peer loads" $R/probe-np1.txt | cut -c1-240
grep -E "^  version|^  channels|host_all_load|eager_jitter" $R/h200-np1.yaml | cut -c1-160
t0=$(date +%s)
CUDA_VISIBLE_DEVICES=0 mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 $VPSIM probe configs/default.yaml \
  --system configs/systems/h200-1x.yaml --virtual --quick --no-curves --out $R/h200-virtual2.yaml > $R/probe-virtual2.txt 2>&1
echo "probe virtual np2 rc=$? in $(( $(date +%s) - t0 )) s"
grep -E "eager_jitter|host_all_load|peer_loads|peer_stores|load_rtt_us:|host_load_rtt_us" $R/h200-virtual2.yaml | cut -c1-200
grep -E "Peer loads|SELF" $R/probe-virtual2.txt | cut -c1-200
ls /tmp | grep -c vpsim-nccl; ls /dev/shm | grep -c vpsim
rm -f $R/gpu-logs/*.json; cp bench/runs/2026-12-01-h200-s14a/gpu_s14a.sh $R/
tar czf $OUT/s14a.tgz -C $OUT raw && rm -rf $R
