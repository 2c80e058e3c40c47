set -u
W=$(mktemp -d); KT=build/vpsim-kernel-tests
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $W/gpu.txt
OUT=$W/sweep ATTN_CASES="mla-8k mla-32k mla-128k" FLUSHES=clean ATTN_ITERS=40 ATTN_SWEEP="0:0:0:2,0:0:0:3,0:0:0:2,0:0:0:3,0:0:0:2,0:0:0:3" PROBE_CASE="mla-8k mla-128k" PROBE_SETTINGS="0:0:0:3" PROBE_FLUSH=clean timeout 130 bash bench/attn_sweep.sh > $W/sweep.log 2>&1; echo "sweep rc=$?"
awk '{for(i=1;i<=NF;i++){split($i,kv,"="); f[kv[1]]=substr($i,length(kv[1])+2)} print f["case"], f["ok"], f["median_us"], f["p10_us"], f["p90_us"], f["info"]}' $W/sweep/sweep.txt | sed -E 's/rows_blk=[0-9]+,//; s/dv_chunks=1,//; s/mt=4,//; s/,ws=[0-9]+//; s/tn=64,//; s/blocks_per_sm=1,//; s/keys_per_split=[0-9]+,//; s/smem=[0-9]+,//'
grep -h "trace blocks" $W/sweep/probe.txt | cut -c1-300
GPU_TEST_LOGS=$W/gpu-test-logs GPU_TEST_COMM=0 timeout 200 tests/gpu/run_gpu_tests.sh > $W/gpu-suite.log 2>&1; echo "suite rc=$?"
tail -1 $W/gpu-suite.log; grep -iE "^FAIL|failed:" $W/gpu-suite.log | head -8
OUT=$W/law timeout 220 bash bench/law_h200.sh > $W/law.log 2>&1; echo "law rc=$?"
tail -45 $W/law.log
tar -czf $OUT/call5.tgz -C $W .
