set -u
W=$(mktemp -d); KT=build/vpsim-kernel-tests
trap 'tar -czf $OUT/call1.tgz -C $W .' EXIT
export NCCL_NVLS_ENABLE=0
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $W/gpu.txt
date -u | tee -a $W/gpu.txt
# 1. SASS of the combine kernels (sm_90a): which loads each one issues
for b in vpsim-kernel-tests kt-bf16 kt-bf16w; do
  cuobjdump -sass -arch sm_90a build/$b 2>/dev/null | awk '/Function : .*attn_combine/{p=1} /Function : /&&!/attn_combine/{p=0} p' > $W/sass-$b.txt
  echo "$b: $(grep -c . $W/sass-$b.txt) lines"; grep -o "Function : .*\|LDG[.A-Z0-9]*\|LD\.[.A-Z0-9]*" $W/sass-$b.txt | sort | uniq -c | sed "s/^/  /"
done
# 2. validate the wide bf16 combine on every attention case
timeout 150 build/kt-bf16w --kernel attention --no-bench > $W/valid-bf16w.txt 2>&1; echo "valid rc=$? cases=$(grep -c '^kernel=' $W/valid-bf16w.txt) bad=$(grep -c 'ok=0' $W/valid-bf16w.txt)"
grep -o "case=mla[^ ]*\|max_err=[^ ]*" $W/valid-bf16w.txt | paste -d' ' - - | head -12
if grep -q "ok=0" $W/valid-bf16w.txt || ! grep -q "^kernel=" $W/valid-bf16w.txt; then echo "BF16W INVALID"; exit 0; fi
# 3. A/B/C, three alternations, every mla case in one process per binary
for rep in 1 2 3; do for b in vpsim-kernel-tests kt-bf16 kt-bf16w; do
  timeout 120 build/$b --kernel attention --case mla- --iters 40 --flush clean 2>&1 | grep "^kernel=" | grep -o "case=[^ ]*\|median_us=[^ ]*\|p10_us=[^ ]*\|p90_us=[^ ]*" | paste -d' ' - - - - | sed "s/^/$rep $b /" >> $W/times.txt
done; echo "rep $rep done $(date -u +%T)"; done
sort -k3,3 -k2,2 -s $W/times.txt | sed 's/median_us=//;s/p10_us=//;s/p90_us=//;s/case=//'
# 4. probe: where the time goes (split only, combine only, trace)
for c in mla-8k mla-128k-h16; do for b in vpsim-kernel-tests kt-bf16 kt-bf16w; do
  timeout 60 build/$b --kernel probe --case $c --flush clean > $W/probe-$c-$b.txt 2>&1
  echo "== $c $b"; grep "case=$c " $W/probe-$c-$b.txt | grep -o "mode=[^ ]*\|median_us=[^ ]*\|split_end_ns=[^ ]*\|combine_end_ns=[^ ]*\|combine_released_ns=[^ ]*\|epilogue=[^ ]*\|tile_next=[^ ]*" | paste -s -d' ' | cut -c1-600
done; done
# 5. replay, two alternations
for rep in 1 2; do for v in vpsim vpsim-bf16w; do
  timeout 90 build/$v run configs/default.yaml --system configs/systems/h200-1x-probed.yaml --backend none --iters 20 --warmup 3 --instrumented 3 --class-cost --set system.gpu.memory_gib=1000 --attn-kernel wgmma --format json > $W/replay-$rep-$v.json 2> $W/replay-$rep-$v.err
  echo "replay $rep $v rc=$?"; python3 build/s24_json.py $W/replay-$rep-$v.json 2>&1 | head -8
done; done
# 6. ncu on the combine (hardware counters, if this runtime has them)
for b in vpsim-kernel-tests kt-bf16 kt-bf16w; do
  timeout 100 ncu --clock-control none -k regex:attn_combine -c 1 --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section LaunchStats --section Occupancy build/$b --kernel attention --case mla-128k-h16 --iters 1 --warmup 0 --no-bench > $W/ncu-$b.txt 2>&1; echo "ncu $b rc=$?"
  grep -i "Duration\|DRAM Throughput\|Memory Throughput\|L2 Hit\|L1/TEX Hit\|Stall\|Achieved Occupancy\|Registers\|Grid Size\|Block Size\|ERR\|==PROF==" $W/ncu-$b.txt | head -24
done
date -u
# 7. the GPU suite on main's binaries (da5b1ec's review commit has not run on a GPU), if time is left
if [ $SECONDS -lt 300 ]; then GPU_TEST_LOGS=$W/gpu-test-logs GPU_TEST_COMM=0 timeout $((440 - SECONDS)) tests/gpu/run_gpu_tests.sh > $W/gpu-suite.log 2>&1; echo "suite rc=$?"; tail -2 $W/gpu-suite.log; else echo "suite skipped at $SECONDS s"; fi
date -u; echo "elapsed $SECONDS s"
