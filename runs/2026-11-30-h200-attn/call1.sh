#!/usr/bin/env bash
# Call 1 of issue #13 item 1 (attention launch floor): baseline, probes, sweeps, ncu, library kernels.
B=devtmp/attn/vpsim-kernel-tests
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,driver_version --format=csv; which ncu nsys; ncu --version | tail -1; date -u; } > $OUT/env.txt 2>&1
$B --kernel attention --iters 100 > $OUT/attn_before.txt 2>&1; echo "attn rc=$?"
$B --kernel probe --iters 100 > $OUT/probe.txt 2>&1; echo "probe rc=$?"
{
for cfg in "64 32" "64 64" "64 128" "32 64" "32 128" "32 256" "16 128" "16 256" "16 512"; do
  set -- $cfg; echo "# mla-8k tile $1 splits $2"; $B --kernel attention --case mla-8k --attn-tile $1 --attn-splits $2 --iters 100 | grep case=
done
for cfg in "64 4" "64 8" "64 16" "32 16" "32 32" "16 32" "16 64"; do
  set -- $cfg; echo "# gqa-8k-q3 tile $1 splits $2"; $B --kernel attention --case gqa-8k-q3 --attn-tile $1 --attn-splits $2 --iters 100 | grep case=
done
} > $OUT/sweep.txt 2>&1
M=gpu__time_duration.sum,launch__grid_size,launch__registers_per_thread,launch__occupancy_limit_registers,dram__bytes_read.sum,dram__bytes_write.sum,sm__cycles_active.avg,smsp__cycles_active.avg
{
for c in mla-8k tiny-mla gqa-8k-q3 mla-128k; do
  echo "### $c"; timeout 120 ncu --clock-control none --cache-control all --csv -k regex:attn --metrics $M $B --kernel attention --case $c --iters 2 --warmup 0 2>&1 | grep -v "^==PROF==" | tail -n 20
done
echo "### sections mla-8k"
timeout 150 ncu --clock-control none --cache-control all -k regex:attn -c 2 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis $B --kernel attention --case mla-8k --iters 1 --warmup 0 --no-bench 2>&1 | grep -v "^==PROF=="
} > $OUT/ncu.txt 2>&1
timeout 150 python3 devtmp/attn/attn_library.py 100 > $OUT/lib.txt 2>&1
cat $OUT/env.txt; grep -h "case=" $OUT/attn_before.txt | awk '{print $2,$5,$6,$9,$10}' | head -30
grep -h "probe" $OUT/probe.txt | sed 's/probe //'
cat $OUT/lib.txt
