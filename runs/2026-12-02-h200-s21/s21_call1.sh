set -u
W=$(mktemp -d); KT=build/vpsim-kernel-tests
trap 'tar -czf $OUT/call1.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $W/gpu.txt
$KT --kernel attention --case wgmma-layout > $W/layout.txt 2>&1; echo "layout rc=$?"; tail -2 $W/layout.txt
OUT=$W/v VALIDATE_KERNELS="3" RACE_CASES="mla-q5-rows40" ATTN_CASES="" PROBE_CASE="" timeout 90 bash bench/attn_sweep.sh > $W/validate.log 2>&1
grep -E "^== |^rc=|ok=0|SUMMARY" $W/v/validate.txt | head; grep -c "ok=1" $W/v/validate.txt
if grep -q "ok=0" $W/v/validate.txt || ! grep -q "^rc=0" $W/v/validate.txt; then echo "VALIDATION FAILED: stop"; grep -B2 -A2 "ok=0" $W/v/validate.txt | head -30; exit 0; fi
OUT=$W/sweep ATTN_CASES="mla-8k mla-32k mla-128k" FLUSHES=clean ATTN_ITERS=40 ATTN_SWEEP="0:0:0:2,0:0:0:3,0:0:0:2,0:0:0:3,0:0:0:2,0:0:0:3" PROBE_CASE="mla-128k-h16 mla-32k mla-8k" PROBE_SETTINGS="0:0:0:3" PROBE_FLUSH=clean timeout 150 bash bench/attn_sweep.sh > $W/sweep.log 2>&1
awk '{for(i=1;i<=NF;i++){split($i,kv,"="); f[kv[1]]=substr($i,length(kv[1])+2)} print f["case"], f["median_us"], f["p10_us"], f["p90_us"], f["info"]}' $W/sweep/sweep.txt | sed -E 's/splits=.*kernel=/k=/; s/,wgs=.//' | paste -d' ' - - - - - -
grep -h "trace\|combine" $W/sweep/probe.txt | cut -c1-300 | head -40
