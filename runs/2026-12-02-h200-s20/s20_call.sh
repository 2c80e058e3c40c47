set -u
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv > $OUT/gpu.txt; cat $OUT/gpu.txt
KT=build/vpsim-kernel-tests
$KT --kernel attention --case wgmma-layout 2>&1 | tail -2
OUT=$OUT/sweep VALIDATE_KERNELS="3" RACE_CASES="mla-batch3 mla-q5-rows40" ATTN_CASES="mla-8k mla-32k mla-128k" FLUSHES=clean ATTN_ITERS=40 ATTN_SWEEP="0:0:0:2,0:0:0:3,0:0:0:2,0:0:0:3,0:0:0:2,0:0:0:3" PROBE_CASE="mla-8k mla-32k mla-128k" PROBE_SETTINGS="0:0:0:3" PROBE_FLUSH=clean timeout 330 bash bench/attn_sweep.sh 2>&1 | tail -40
for k in mla wgmma mla wgmma; do
  timeout 100 build/vpsim run configs/default.yaml --system configs/systems/h200-1x-probed.yaml --backend none --iters 20 --warmup 3 --instrumented 3 --class-cost --set system.gpu.memory_gib=1000 --attn-kernel $k --format json > $OUT/run-$k-$SECONDS.json 2>$OUT/run-$k.err; echo "run $k rc=$?"
done
nvidia-smi --query-gpu=clocks.sm,temperature.gpu --format=csv
