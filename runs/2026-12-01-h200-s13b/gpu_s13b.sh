#!/usr/bin/env bash
# Session 13, call 2 (kind nvidia-h200): the merged probe (h-links + h-probe): the GPU suite (kt_links,
# 60-sysmem, 70-links-probe), the probe on the one real GPU (np 1: host path and launch costs of this
# box) and on virtual ranks (np 2, the full grid, timed), and the model loading what it wrote.
export VPSIM=devtmp/bin/vpsim VPSIM_KERNEL_TESTS=devtmp/bin/vpsim-kernel-tests NCCL_NVLS_ENABLE=0
M="mpirun --allow-run-as-root --oversubscribe --bind-to none"
R=$OUT/raw; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu-state.txt 2>&1
nvidia-smi topo -m > $R/topo.txt 2>&1; numactl -H > $R/numa.txt 2>&1; lscpu > $R/lscpu.txt 2>&1
t0=$(date +%s)
GPU_TEST_COMM=0 GPU_TEST_LOGS=$R/gpu-logs timeout 330 bash tests/gpu/run_gpu_tests.sh > $R/gpu.txt 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $R/gpu.txt; grep -E '^FAIL' $R/gpu.txt | head -20
for i in 1 2 3; do
  t0=$(date +%s)
  $M -np 1 $VPSIM probe configs/default.yaml --system configs/systems/h200-1x.yaml --out $R/h200-np1-$i.yaml > $R/probe-np1-$i.txt 2>&1
  echo "probe np1 #$i rc=$? in $(( $(date +%s) - t0 )) s"
done
grep -E "host_|eager_|graph_|mpi_|convert" $R/h200-np1-1.yaml | grep measured | cut -c1-150
t0=$(date +%s)
CUDA_VISIBLE_DEVICES=0 $M -np 2 $VPSIM probe configs/default.yaml --system configs/systems/h200-1x.yaml --virtual --out $R/virtual-np2.yaml > $R/probe-virtual-np2.txt 2>&1
echo "probe virtual np2 rc=$? in $(( $(date +%s) - t0 )) s"; head -20 $R/probe-virtual-np2.txt
$VPSIM model configs/default.yaml --system $R/virtual-np2.yaml --backend nccl,oneshot,push,mpi > $R/model-virtual.txt 2>&1; echo "model rc=$?"
rm -f $R/gpu-logs/*.json; cp devtmp/gpu_s13b.sh $R/
tar czf $OUT/s13b.tgz -C $OUT raw && rm -rf $R
