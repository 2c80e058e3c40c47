set -u
W=$(mktemp -d); KT=build/vpsim-kernel-tests
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $W/gpu.txt
$KT --kernel attention --case wgmma-layout 2>&1 | grep "^kernel=" | cut -c1-200
OUT=$W/sweep VALIDATE_KERNELS="3" RACE_CASES="mla-q5-rows40 mla-batch3" ATTN_CASES="mla-8k mla-32k-h16 mla-128k-h16" FLUSHES=clean ATTN_ITERS=40 ATTN_SWEEP="0:0:0:2,0:0:0:3,0:0:64:3,0:0:0:2,0:0:0:3,0:0:64:3" PROBE_CASE="mla-8k mla-8k-h16" PROBE_SETTINGS="0:0:0:3" PROBE_FLUSH=clean timeout 360 bash bench/attn_sweep.sh > $W/sweep.log 2>&1
grep -E "^== |^rc=|ok=0|RACECHECK SUMMARY" $W/sweep/validate.txt | head -20
grep -c "ok=1" $W/sweep/validate.txt
grep -o "kernel=[0-9],wgs=[0-9]" $W/sweep/validate.txt | sort | uniq -c
awk '{for(i=1;i<=NF;i++){split($i,kv,"="); f[kv[1]]=substr($i,length(kv[1])+2)} print f["case"], f["ok"], f["median_us"], f["p10_us"], f["p90_us"], f["info"]}' $W/sweep/sweep.txt | sed -E 's/rows_blk=[0-9]+,//; s/dv_chunks=1,//; s/mt=4,//; s/,ws=[0-9]+//; s/tn=64,//; s/blocks_per_sm=1,//'
grep -h "trace blocks" $W/sweep/probe.txt | cut -c1-330
tar -czf $OUT/call3.tgz -C $W .
