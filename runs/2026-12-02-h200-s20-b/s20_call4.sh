set -u
W=$(mktemp -d); KT=build/vpsim-kernel-tests
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $W/gpu.txt
$KT --kernel attention --case wgmma-layout 2>&1 | grep "^kernel=" | cut -c1-200
OUT=$W/sweep VALIDATE_KERNELS="3" SANITIZERS="racecheck memcheck" RACE_CASES="mla-q5-rows40 mla-batch3" ATTN_CASES="mla-8k mla-32k mla-128k" FLUSHES=clean ATTN_ITERS=40 ATTN_SWEEP="0:0:0:2,0:0:0:3,0:0:0:2,0:0:0:3,0:0:0:2,0:0:0:3" PROBE_CASE="mla-8k mla-32k mla-128k" PROBE_SETTINGS="0:0:0:3" PROBE_FLUSH=clean timeout 400 bash bench/attn_sweep.sh > $W/sweep.log 2>&1
grep -E "^== |^rc=|ok=0|SUMMARY" $W/sweep/validate.txt | head -24
grep -c "ok=1" $W/sweep/validate.txt
grep -o "kernel=[0-9],wgs=[0-9],part_bf16=[0-9]" $W/sweep/validate.txt | sort | uniq -c
awk '{for(i=1;i<=NF;i++){split($i,kv,"="); f[kv[1]]=substr($i,length(kv[1])+2)} print f["case"], f["ok"], f["max_err"], f["median_us"], f["p10_us"], f["p90_us"], f["info"]}' $W/sweep/sweep.txt | sed -E 's/rows_blk=[0-9]+,//; s/dv_chunks=1,//; s/mt=4,//; s/,ws=[0-9]+//; s/tn=64,//; s/blocks_per_sm=1,//; s/keys_per_split=[0-9]+,//'
grep -h "trace blocks" $W/sweep/probe.txt | cut -c1-300
for k in mla wgmma mla wgmma; do
  timeout 100 build/vpsim run configs/default.yaml --system configs/systems/h200-1x-probed.yaml --backend none --iters 20 --warmup 3 --instrumented 3 --class-cost --set system.gpu.memory_gib=1000 --attn-kernel $k --format json > $W/run-$k-$SECONDS.json 2>>$W/run.err; echo "run $k rc=$?"
done
tar -czf $OUT/call4.tgz -C $W .
