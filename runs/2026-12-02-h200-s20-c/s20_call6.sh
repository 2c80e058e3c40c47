set -u
W=$(mktemp -d); KT=build/vpsim-kernel-tests
trap 'tar -czf $OUT/call6.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $W/gpu.txt
OUT=$W/v VALIDATE_KERNELS="3" RACE_CASES="mla-q5-rows40" ATTN_CASES="" PROBE_CASE="" timeout 70 bash bench/attn_sweep.sh > $W/validate.log 2>&1
grep -E "^== |^rc=|ok=0|SUMMARY" $W/v/validate.txt | head; grep -c "ok=1" $W/v/validate.txt
grep "kernel=3" $W/v/validate.txt | grep -o "shape=[^ ]*\|splits=[^ ]*" | paste - - | sort -u | head -12
if grep -q "ok=0" $W/v/validate.txt || ! grep -q "^rc=0" $W/v/validate.txt; then echo "VALIDATION FAILED: stop"; exit 0; fi
OUT=$W/sweep ATTN_CASES="mla-8k mla-32k mla-128k" FLUSHES=clean ATTN_ITERS=40 ATTN_SWEEP="0:0:0:2,0:0:0:3,0:0:0:2,0:0:0:3,0:0:0:2,0:0:0:3" PROBE_CASE="mla-128k-h16 mla-8k" PROBE_SETTINGS="0:0:0:3" PROBE_FLUSH=clean timeout 100 bash bench/attn_sweep.sh > $W/sweep.log 2>&1
awk '{for(i=1;i<=NF;i++){split($i,kv,"="); f[kv[1]]=substr($i,length(kv[1])+2)} print f["case"], f["median_us"], f["p10_us"], f["p90_us"], f["info"]}' $W/sweep/sweep.txt | sed -E 's/splits=.*kernel=/k=/; s/,wgs=.//' | paste -d' ' - - - - - -
grep -h "trace blocks" $W/sweep/probe.txt | cut -c1-250
GPU_TEST_LOGS=$W/gpu-test-logs GPU_TEST_COMM=0 timeout 115 tests/gpu/run_gpu_tests.sh > $W/gpu-suite.log 2>&1; echo "suite rc=$?"; tail -1 $W/gpu-suite.log
OUT=$W/law timeout 140 bash bench/law_h200.sh > $W/law.log 2>&1; echo "law rc=$?"
tail -18 $W/law.log | cut -d"|" -f2,5,7,8
