#!/usr/bin/env bash
# Session 11, call 2 (nvidia-h200-x2): #12's must-show replays of the default scenario at TP=2 (one GPU per
# rank) with --check: baseline, fusion, split, EP=2; then the new collectives alone (bench, graph).
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
V=devtmp/bin/vpsim; SYS=configs/systems/h200-2x-nvlink.yaml
M=(mpirun -np 2 --bind-to none -x NCCL_NVLS_ENABLE)
run() { # tag backend sets...
  local tag=$1 be=$2; shift 2
  local t0=$(date +%s)
  timeout ${RUN_S:-70} "${M[@]}" $V run configs/default.yaml --system $SYS --set parallel.tp=2 "$@" --backend $be --check \
     --iters ${ITERS:-20} --warmup 5 --out $OUT/run-$tag-$be.json > $OUT/run-$tag-$be.log 2>&1
  local rc=$?
  printf '%-8s %-8s rc=%d %3ds  %s\n' "$tag" "$be" $rc $(( $(date +%s) - t0 )) "$(grep -E 'CHECK|cycle' $OUT/run-$tag-$be.log | head -2 | tr '\n' ' ' | cut -c1-120)"
}
for be in nccl oneshot twoshot push mpi; do run base $be; done
for be in nccl oneshot push twoshot; do run fusion $be --set fusion.allreduce_residual_norm=true; done
for be in nccl oneshot twoshot push; do run split $be --set collectives.allreduce_split=true; done
for be in nccl mpi; do run ep $be --set parallel.ep=2; done
echo "--- collectives alone (graph, 2 GPUs)"
for c in reduce_scatter alltoall; do
  bes=nccl,oneshot,twoshot,push,mpi; [ $c = alltoall ] && bes=nccl,mpi
  timeout 90 "${M[@]}" $V bench-allreduce --collective $c --backend $bes --check --graph \
    --sizes 4096,16384,43008,65536,262144,1048576 -n 50 -w 10 --format json --out $OUT/bench-$c.json > $OUT/bench-$c.log 2>&1
  echo "bench $c rc=$?"; tail -3 $OUT/bench-$c.log
done
