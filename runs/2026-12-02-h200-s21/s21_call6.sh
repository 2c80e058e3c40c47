set -u
W=$(mktemp -d); KT=build/vpsim-kernel-tests
trap 'tar -czf $OUT/call6.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $W/gpu.txt
OUT=$W/v VALIDATE_KERNELS="3" RACE_CASES="mla-q5-rows40 mla-32k-q8" SANITIZERS="racecheck synccheck memcheck" ATTN_CASES="" PROBE_CASE="" timeout 170 bash bench/attn_sweep.sh > $W/validate.log 2>&1
grep -E "^== |^rc=|ok=0|SUMMARY" $W/v/validate.txt | head -20; grep -c "ok=1" $W/v/validate.txt
grep "kernel=3" $W/v/validate.txt | grep "wgs=2" | grep -o "case=mla[^ ]*\|max_err=[^ ]*\|info=[^ ]*" | paste - - - | sort -u | head -12
grep "ok=0" $W/v/validate.txt | head -5
if grep -q "ok=0" $W/v/validate.txt || grep -q "hazards displayed ([1-9]\|ERROR SUMMARY: [1-9]" $W/v/validate.txt; then echo "VALIDATION FAILED: stop"; exit 0; fi
for rep in 1 2 3; do for b in kt-old vpsim-kernel-tests; do for c in mla-8k-h16 mla-32k-h16 mla-128k-h16 mla-32k-q8 mla-q5-rows40; do
  build/$b --kernel attention --case $c --iters 40 --flush clean 2>&1 | grep "^kernel=" | grep -o "case=[^ ]*\|median_us=[^ ]*\|p10_us=[^ ]*\|p90_us=[^ ]*" | paste -s -d' ' | sed "s/^/$b /" >> $W/times.txt
done; done; done
for c in mla-8k mla-32k mla-128k; do build/vpsim-kernel-tests --kernel attention --case $c --iters 40 --flush clean 2>&1 | grep "^kernel=" | grep -v h16 | grep -o "case=[^ ]*\|median_us=[^ ]*" | paste -s -d' ' >> $W/times24.txt; done
sort -k2,2 -s $W/times.txt | awk '{print $1, $2, $3}' | paste -d' ' - - - - - -; cat $W/times24.txt
for c in mla-8k-h16 mla-32k-h16 mla-128k-h16; do
  timeout 60 $KT --kernel probe --case $c --flush clean > $W/probe-$c.txt 2>&1
  grep -h "trace" $W/probe-$c.txt | cut -c1-330
done
H=$(grep "vpsim-kernel-tests case=mla-128k-h16 " $W/times.txt | head -1 | grep -o "median_us=[0-9.]*" | cut -d= -f2)
echo "128k-h16 new first median: $H"
if awk "BEGIN{exit !($H < 58)}"; then
  GPU_TEST_LOGS=$W/gpu-test-logs GPU_TEST_COMM=0 timeout 150 tests/gpu/run_gpu_tests.sh > $W/gpu-suite.log 2>&1; echo "suite rc=$?"; tail -1 $W/gpu-suite.log
  OUT=$W/law timeout 160 bash bench/law_h200.sh > $W/law.log 2>&1; echo "law rc=$?"
  tail -18 $W/law.log | cut -d"|" -f2,5,7,8
fi
