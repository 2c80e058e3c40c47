set -u
W=$(mktemp -d)
trap 'tar -czf $OUT/call8.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $W/gpu.txt
GPU_TEST_LOGS=$W/gpu-test-logs GPU_TEST_COMM=0 timeout 170 tests/gpu/run_gpu_tests.sh > $W/gpu-suite.log 2>&1; echo "suite rc=$?"; tail -1 $W/gpu-suite.log
for c in mla-8k mla-32k mla-128k; do timeout 40 build/vpsim-kernel-tests --kernel attention --case $c --iters 40 --flush clean > $W/t-$c.txt 2>&1; grep "^kernel=" $W/t-$c.txt | grep -o "case=[^ ]*\|ok=.\|median_us=[^ ]*\|p10_us=[^ ]*\|p90_us=[^ ]*" | paste - - - - - ; done
