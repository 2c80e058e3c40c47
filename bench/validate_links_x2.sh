#!/usr/bin/env bash
# Issue #11 item 4 on two GPUs (kind nvidia-h200-x2): probe -> system file -> model against
# bench-allreduce and vpsim run on the same machine (graph mode; like with like: measured.use=false so
# no curve is read back; only the probe's link quantities and launch/host figures feed the model).
# Run through the device tool with binaries built here and carried:
#   cp build/vpsim build/vpsim-kernel-tests devtmp/bin/
#   run: bash bench/validate_links_x2.sh   carry: ["devtmp/bin"]   kind: nvidia-h200-x2
# Everything lands in $OUT/s13x2.tgz (raw/: the probed file, bench and run outputs, the model table).
export VPSIM=devtmp/bin/vpsim VPSIM_KERNEL_TESTS=devtmp/bin/vpsim-kernel-tests NCCL_NVLS_ENABLE=0
M="mpirun --allow-run-as-root --oversubscribe --bind-to none"
R=$OUT/raw; mkdir -p $R
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > $R/gpu-state.txt 2>&1
nvidia-smi topo -m > $R/topo.txt 2>&1; numactl -H > $R/numa.txt 2>&1
F=$R/h200-2x-probed.yaml; F2=$R/h200-2x-probed-compute.yaml
t0=$(date +%s); $M -np 2 $VPSIM probe configs/default.yaml --system configs/systems/h200-2x-nvlink.yaml --out $F > $R/probe.txt 2>&1
echo "probe rc=$? in $(( $(date +%s) - t0 )) s"; head -24 $R/probe.txt
t0=$(date +%s); CUDA_VISIBLE_DEVICES=0 $VPSIM calibrate --measure configs/default.yaml --set parallel.tp=2 --base $F --out $F2 > $R/calibrate.txt 2>&1
echo "calibrate rc=$? in $(( $(date +%s) - t0 )) s"
S="--sizes 4K,8K,43008,64K,256K,1M -n 50 -w 10 --graph --model --set system.measured.use=false"
$M -np 2 $VPSIM bench-allreduce configs/default.yaml --system $F --backend nccl,oneshot,twoshot,push $S --format json --out $R/bench-direct.json > $R/bench-direct.txt 2>&1; echo "bench direct rc=$?"
$M -np 2 -x NCCL_P2P_DISABLE=1 $VPSIM bench-allreduce configs/default.yaml --system $F --backend nccl $S --set system.topology.p2p=off --format json --out $R/bench-p2poff.json > $R/bench-p2poff.txt 2>&1; echo "bench p2p off rc=$?"
$M -np 2 $VPSIM bench-allreduce configs/default.yaml --system $F --backend oneshot,twoshot,push --p2p sysmem $S --set system.topology.p2p=sysmem --format json --out $R/bench-sysmem.json > $R/bench-sysmem.txt 2>&1; echo "bench sysmem rc=$?"
$M -np 2 $VPSIM bench-allreduce configs/default.yaml --system $F --backend mpi --sizes 4K,43008,256K,1M -n 50 -w 10 --model --set system.measured.use=false --format json --out $R/bench-mpi.json > $R/bench-mpi.txt 2>&1; echo "bench mpi rc=$?"
for f in direct p2poff sysmem mpi; do grep -E "^#|^ +[0-9]" $R/bench-$f.txt | grep -v "^# measured" ; done
for b in nccl oneshot twoshot push none; do
  $M -np 2 $VPSIM run configs/default.yaml --system $F2 --set parallel.tp=2 --backend $b --iters 20 --warmup 5 --out $R/run-$b.json > $R/run-$b.txt 2>&1
  echo "run $b rc=$? $(grep -E '^  cycle' $R/run-$b.txt | head -1)"
done
$VPSIM model configs/default.yaml --system $F2 --set parallel.tp=2 --set system.measured.use=false --backend nccl,oneshot,twoshot,push,none > $R/model-tp2.txt 2>&1
grep -A8 "^backend" $R/model-tp2.txt
cp bench/validate_links_x2.sh $R/
tar czf $OUT/s13x2.tgz -C $OUT raw && rm -rf $R
