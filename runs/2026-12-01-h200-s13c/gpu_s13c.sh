#!/usr/bin/env bash
# Session 13, call 3 (kind nvidia-h200): the final tree (vp_sys_ops.cuh shared by the allreduce kernels and
# the probe): the GPU suite and the comm sections; then the one backend whose path does not depend on an
# interconnect, host-staged mpi, held against the model fed only by the probe's measured host figures
# (two ranks on the one GPU: copies, fp32 conversions and host MPI are each rank's own).
export VPSIM=devtmp/bin/vpsim VPSIM_KERNEL_TESTS=devtmp/bin/vpsim-kernel-tests NCCL_NVLS_ENABLE=0
M="mpirun --allow-run-as-root --oversubscribe --bind-to none"
R=$OUT/raw; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu-state.txt 2>&1
t0=$(date +%s)
GPU_TEST_COMM=0 GPU_TEST_LOGS=$R/gpu-logs timeout 300 bash tests/gpu/run_gpu_tests.sh > $R/gpu.txt 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $R/gpu.txt; grep -E '^FAIL' $R/gpu.txt | head -20
t0=$(date +%s)
COMM_TEST_QUICK=1 COMM_TEST_RANKS=2 COMM_TEST_SECTIONS="check b2b run fusion" timeout 170 bash tests/gpu/run_comm_tests.sh > $R/comm.txt 2>&1
echo "comm rc=$? in $(( $(date +%s) - t0 )) s"; tail -1 $R/comm.txt
F=$R/h200-virtual-np2.yaml
CUDA_VISIBLE_DEVICES=0 $M -np 2 $VPSIM probe configs/default.yaml --system configs/systems/h200-1x.yaml --virtual --no-curves --out $F > $R/probe.txt 2>&1
echo "probe rc=$?"; grep -E "memcpy_lat|mpi_lat|mpi_bw|convert_gbs" $F | cut -c1-170
for i in 1 2 3; do
  CUDA_VISIBLE_DEVICES=0 $M -np 2 $VPSIM bench-allreduce configs/default.yaml --system $F --set system.gpus=2 \
    --set system.measured.use=false --backend mpi --sizes 4K,43008,256K,1M -n 50 -w 10 --model > $R/bench-mpi-$i.txt 2>&1
  echo "bench mpi #$i rc=$?"; grep -E "^ +[0-9]" $R/bench-mpi-$i.txt
done
$VPSIM model configs/default.yaml --system $F --set system.gpus=2 --set parallel.tp=2 --set system.measured.use=false --backend mpi --explain 2>&1 | grep -A10 "^  mpi = " | head -12
rm -f $R/gpu-logs/*.json; cp devtmp/gpu_s13c.sh $R/
tar czf $OUT/s13c.tgz -C $OUT raw && rm -rf $R
