set -u
W=$(mktemp -d); KT=build/vpsim-kernel-tests
trap 'tar -czf $OUT/call7.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $W/gpu.txt
for b in 0 101376; do timeout 60 $KT --kernel attention --no-bench $([ $b != 0 ] && echo --smem-budget $b) > $W/valid-$b.txt 2>&1; echo "valid budget=$b rc=$? ok=$(grep -c ok=1 $W/valid-$b.txt) bad=$(grep -c ok=0 $W/valid-$b.txt)"; done
timeout 60 compute-sanitizer --tool memcheck $KT --kernel attention --case mla-q5-rows40 --no-bench > $W/memcheck.txt 2>&1; grep "ERROR SUMMARY" $W/memcheck.txt
if grep -q "ok=0" $W/valid-*.txt; then echo "VALIDATION FAILED: stop"; exit 0; fi
for rep in 1 2 3; do for b in kt-old vpsim-kernel-tests; do for c in mla-8k-h16 mla-32k-h16 mla-128k-h16 mla-8k mla-32k; do
  build/$b --kernel attention --case $c --iters 40 --flush clean 2>&1 | grep "^kernel=" | grep -v "h16.*h16" | grep -o "case=[^ ]*\|ok=.\|median_us=[^ ]*\|p10_us=[^ ]*\|p90_us=[^ ]*" | paste -s -d' ' | sed "s/^/$b /" >> $W/times.txt
done; done; done
sort -k2,2 -s $W/times.txt | awk '{print $1, $2, $3, $4}' | paste -d' ' - - - - - -
for c in mla-8k-h16 mla-128k-h16 mla-8k-h128-q1; do timeout 60 $KT --kernel probe --case $c --flush clean > $W/probe-$c.txt 2>&1; grep -h "trace" $W/probe-$c.txt | cut -c1-330; done
GPU_TEST_LOGS=$W/gpu-test-logs GPU_TEST_COMM=0 timeout 150 tests/gpu/run_gpu_tests.sh > $W/gpu-suite.log 2>&1; echo "suite rc=$?"; tail -1 $W/gpu-suite.log
O=$(grep "^kt-old case=mla-128k-h16 " $W/times.txt | head -1 | grep -o "median_us=[0-9.]*" | cut -d= -f2)
N=$(grep "^vpsim-kernel-tests case=mla-128k-h16 " $W/times.txt | head -1 | grep -o "median_us=[0-9.]*" | cut -d= -f2)
echo "128k-h16 old $O new $N"
if awk "BEGIN{exit !($N < $O - 0.3)}"; then
  OUT=$W/law timeout 170 bash bench/law_h200.sh > $W/law.log 2>&1; echo "law rc=$?"
  tail -18 $W/law.log | cut -d"|" -f2,5,7,8
fi
