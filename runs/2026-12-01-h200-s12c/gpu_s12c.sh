#!/usr/bin/env bash
# Session 12, call 3 (kind nvidia-h200): the third probe (MLA rows at every power of two 8-512, KV to 128k),
# then the nine held-out replays again (a second repetition: run-to-run spread), binaries of the final tree.
V=devtmp/bin/vpsim; BASE=configs/systems/h200-1x.yaml; R=$OUT/raw; mkdir -p $R
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $R/smi.txt
t0=$(date +%s)
timeout 120 $V calibrate --measure configs/default.yaml --system $BASE --out $R/h200-1x-probed.yaml > $R/probe.log 2>&1
echo "probe rc=$? $(( $(date +%s) - t0 ))s"; tail -14 $R/probe.log
run() { local tag=$1; shift
  timeout 90 $V run configs/default.yaml --system $BASE --backend none --iters 30 --warmup 5 --instrumented 10 "$@" \
     --out $R/run-$tag.json > $R/run-$tag.log 2>&1; echo "$tag rc=$?"; }
run default; run t1 --set speculative.algorithm=none; run t4 --set speculative.steps=3; run t8 --set speculative.steps=7
run ctx4k --set workload.context=4096; run ctx32k --set workload.context=32768; run ctx128k --set workload.context=131072
run tp2 --set parallel.tp=2 --set system.gpu.memory_gib=1000; run dsv3 --set model=models/deepseek-v3.yaml
cp devtmp/gpu_s12c.sh $R/
tar czf $OUT/s12c.tgz -C $OUT raw && rm -rf $R
