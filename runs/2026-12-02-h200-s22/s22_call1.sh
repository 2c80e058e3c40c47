set -u
W=$(mktemp -d); KT=build/vpsim-kernel-tests
trap 'tar -czf $OUT/call1.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $W/gpu.txt
GPU_TEST_LOGS=$W/gpu-test-logs GPU_TEST_COMM=0 timeout 170 tests/gpu/run_gpu_tests.sh > $W/gpu-suite.log 2>&1; echo "suite rc=$?"; tail -1 $W/gpu-suite.log
timeout 60 $KT --kernel probe --case merge --flush clean > $W/merge.txt 2>&1; echo "merge rc=$?"
grep "case=merge\|case=empty\|copy" $W/merge.txt | sed 's/probe case=merge //' | cut -c1-200
# bulk epilogue: validate, then A/B
for c in mla-8k mla-128k-h16 mla-q5-rows40 mla-batch3; do timeout 40 build/kt-bulk --kernel attention --case $c --no-bench 2>&1 | grep "^kernel=\|ok=0" | grep -o "case=[^ ]*\|ok=.\|info=[^ ]*" | paste -s -d' ' ; done > $W/bulk-valid.txt
cat $W/bulk-valid.txt | cut -c1-160
if grep -q "ok=0" $W/bulk-valid.txt; then echo "BULK INVALID"; exit 0; fi
for rep in 1 2 3; do for b in vpsim-kernel-tests kt-bulk; do for c in mla-8k mla-32k mla-128k-h16; do
  build/$b --kernel attention --case $c --iters 40 --flush clean 2>&1 | grep "^kernel=" | grep -o "case=[^ ]*\|median_us=[^ ]*\|p10_us=[^ ]*\|p90_us=[^ ]*" | grep -v "^$" | paste -s -d' ' | sed "s/^/$b /" >> $W/times.txt
done; done; done
sort -k2,2 -s $W/times.txt | cut -c1-200
for b in vpsim-kernel-tests kt-bulk; do timeout 60 build/$b --kernel probe --case mla-128k-h16 --flush clean > $W/probe-$b.txt 2>&1; grep -h "trace" $W/probe-$b.txt | cut -c1-400; done
