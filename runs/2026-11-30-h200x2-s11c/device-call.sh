#!/usr/bin/env bash
# Session 11, call 3 (nvidia-h200-x2): the clustered fused allreduce+norm kernels: kernel tests, the fusion
# comm section, then the fusion replays (default scenario, TP=2, --check) with baselines in the same call.
export NCCL_NVLS_ENABLE=0 OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
V=devtmp/bin/vpsim; K=devtmp/bin/vpsim-kernel-tests; SYS=configs/systems/h200-2x-nvlink.yaml
for k in allreduce_norm_oneshot allreduce_norm_push residual_rmsnorm; do timeout 60 $K --kernel $k 2>&1 | grep -E "kernel=|FAIL|error" ; echo "kt $k rc=${PIPESTATUS[0]}"; done
COMM_TEST_QUICK=1 COMM_TEST_RANKS="2" COMM_TEST_SECTIONS="fusion" COMM_TEST_LOGS=$OUT/comm-logs COMM_TEST_STEP_TIMEOUT=90 \
  VPSIM=$V timeout 200 bash tests/gpu/run_comm_tests.sh > $OUT/comm.txt 2>&1
echo "comm rc=$?"; grep -E '^(PASS|FAIL|SKIP)' $OUT/comm.txt; tail -1 $OUT/comm.txt
M=(mpirun -np 2 --bind-to none -x NCCL_NVLS_ENABLE)
for rep in 1 2; do
for g in true false; do
for be in oneshot push; do for t in base fusion; do
  set=(); [ $t = fusion ] && set=(--set fusion.allreduce_residual_norm=true)
  timeout 70 "${M[@]}" $V run configs/default.yaml --system $SYS --set parallel.tp=2 --set run.graph=$g "${set[@]}" --backend $be --check \
     --iters 20 --warmup 5 --out $OUT/run-$t-$be-g$g-r$rep.json > $OUT/run-$t-$be-g$g-r$rep.log 2>&1
  echo "$t $be graph=$g rep=$rep rc=$? $(python3 -c "import json;r=json.load(open('$OUT/run-$t-$be-g$g-r$rep.json'));m=r['measured'];b=r['backends'][0];print('cycle %.3f (%.3f-%.3f) comm %.3f check %d'%(m['cycle_median_ms'],m['cycle_min_ms'],m['cycle_max_ms'],b['verify_comm_ms'],m['check_failures']))" 2>&1)"
done; done; done; done
cd $OUT && tar czf /tmp/s11c.tgz . && rm -rf $OUT/* && mv /tmp/s11c.tgz $OUT/
