#!/usr/bin/env bash
# Session 12, call 1 (kind nvidia-h200-x2, one of its two H200s used): #13 items 2-3. The compute probe, then held-out replays (one rank,
# backend none, CUDA graph) of scenarios the probe never saw, each with the probed system file.
V=devtmp/bin/vpsim; BASE=configs/systems/h200-1x.yaml; R=$OUT/raw; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu,memory.used --format=csv > $R/smi-before.txt
t0=$(date +%s)
timeout 240 $V calibrate --measure configs/default.yaml --system $BASE --out $R/h200-1x-probed.yaml > $R/probe.log 2>&1
echo "probe rc=$? $(( $(date +%s) - t0 ))s"; tail -30 $R/probe.log
P=$R/h200-1x-probed.yaml; [ -s $P ] || P=$BASE
run() { # tag sets...
  local tag=$1; shift; local t=$(date +%s)
  timeout 90 $V run configs/default.yaml --system $P --backend none --iters 30 --warmup 5 --instrumented 10 "$@" \
     --out $R/run-$tag.json > $R/run-$tag.log 2>&1
  printf '%-10s rc=%d %3ds %s\n' $tag $? $(( $(date +%s) - t )) "$(grep -m1 -E 'cycle' $R/run-$tag.log | cut -c1-100)"
}
run default
run t1 --set speculative.algorithm=none
run t4 --set speculative.steps=3
run t8 --set speculative.steps=7
run ctx4k --set workload.context=4096
run ctx32k --set workload.context=32768
run ctx128k --set workload.context=131072
run tp2 --set parallel.tp=2 --set system.gpu.memory_gib=1000
run dsv3 --set model=models/deepseek-v3.yaml
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $R/smi-after.txt
cp devtmp/gpu_s12a.sh $R/
tar czf $OUT/s12a.tgz -C $OUT raw && rm -rf $R
