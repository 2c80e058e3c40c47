set -u
W=$(mktemp -d); KT=build/vpsim-kernel-tests
trap 'tar -czf $OUT/call4.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $W/gpu.txt
OUT=$W/v VALIDATE_KERNELS="3" RACE_CASES="mla-q5-rows40 mla-32k-q8" SANITIZERS="racecheck synccheck" ATTN_CASES="" PROBE_CASE="" timeout 150 bash bench/attn_sweep.sh > $W/validate.log 2>&1
grep -E "^== |^rc=|ok=0|SUMMARY" $W/v/validate.txt | head -20; grep -c "ok=1" $W/v/validate.txt
grep "kernel=3" $W/v/validate.txt | grep -o "case=mla[^ ]*\|info=[^ ]*" | paste - - | sort -u | head -20
if grep -q "ok=0" $W/v/validate.txt || grep -q "hazards displayed ([1-9]\|ERROR SUMMARY: [1-9]" $W/v/validate.txt; then echo "VALIDATION FAILED: stop"; exit 0; fi
OUT=$W/sweep ATTN_CASES="mla-8k mla-32k mla-128k" FLUSHES=clean ATTN_ITERS=40 ATTN_SWEEP="0:0:0:2,0:0:0:3,0:0:0:2,0:0:0:3,0:0:0:2,0:0:0:3" PROBE_CASE="mla-8k-h16 mla-32k mla-128k" PROBE_SETTINGS="0:0:0:3" PROBE_FLUSH=clean timeout 200 bash bench/attn_sweep.sh > $W/sweep.log 2>&1
awk '{for(i=1;i<=NF;i++){split($i,kv,"="); f[kv[1]]=substr($i,length(kv[1])+2)} print f["case"], f["median_us"], f["p10_us"], f["p90_us"], f["info"]}' $W/sweep/sweep.txt | sed -E 's/splits=.*kernel=/k=/; s/,wgs=.//' | paste -d' ' - - - - - -
grep -h "trace" $W/sweep/probe.txt | cut -c1-330
H=$(awk '/case=mla-128k-h16/ && /kernel=3/ {for(i=1;i<=NF;i++) if ($i ~ /^median_us=/) {split($i,a,"="); print a[2]; exit}}' $W/sweep/sweep.txt)
echo "128k-h16 k3 first median: $H"
if awk "BEGIN{exit !($H < 59)}"; then
  GPU_TEST_LOGS=$W/gpu-test-logs GPU_TEST_COMM=0 timeout 150 tests/gpu/run_gpu_tests.sh > $W/gpu-suite.log 2>&1; echo "suite rc=$?"; tail -1 $W/gpu-suite.log
  OUT=$W/law timeout 200 bash bench/law_h200.sh > $W/law.log 2>&1; echo "law rc=$?"
  tail -18 $W/law.log | cut -d"|" -f2,5,7,8
fi
