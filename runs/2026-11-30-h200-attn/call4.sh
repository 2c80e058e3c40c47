#!/usr/bin/env bash
# Call 4: vector epilogue + one-round combine: validate (device limits, sm_120 budget, forced splits, sanitizer), A/B, probes, sweep.
B=devtmp/attn/vpsim-kernel-tests; A=devtmp/attn/vpsim-kernel-tests.before
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
$B --kernel attention --iters 100 > $OUT/attn_after.txt 2>&1; echo "after rc=$? $(tail -1 $OUT/attn_after.txt)"
$B --kernel attention --smem-budget 101376 --no-bench --quick > $OUT/valid_extra.txt 2>&1; echo "sm120-budget rc=$?"
for a in "mla-32k 300" "gqa-8k-q3 200" "scalar-path 150" "pad-dims 129" "wider-v 17" "mla-batch3 2"; do set -- $a; $B --kernel attention --case $1 --attn-splits $2 --no-bench >> $OUT/valid_extra.txt 2>&1; echo "forced $1 splits $2 rc=$?"; done
for t in racecheck memcheck synccheck; do timeout 100 compute-sanitizer --tool $t --error-exitcode 9 $B --kernel attention --case 8k --no-bench > $OUT/san.txt 2>&1; echo "san $t 8k rc=$?"; done
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 $B --kernel attention --case scalar --no-bench >> $OUT/san.txt 2>&1; echo "san memcheck scalar rc=$?"
{ for r in 1 2 3; do for bin in $A $B; do echo "# $bin round $r"; $bin --kernel attention --iters 100 | grep -E "case=(mla-8k|mla-32k|mla-128k|mla-32k-q1|mla-32k-q8|gqa-8k-q1|gqa-8k-q3|gqa-32k-q3|tiny-mla|mla-batch3|many-rows) " ; done; done; } > $OUT/ab.txt 2>&1
$B --kernel probe --iters 100 > $OUT/probe_after.txt 2>&1; echo "probe rc=$?"
{ for cfg in "mla-8k 64 96" "mla-8k 64 128" "mla-32k 64 64" "mla-32k 64 132" "mla-128k 64 132" "gqa-8k-q3 64 16" "gqa-8k-q3 64 64" "gqa-32k-q3 64 64" "mla-32k-q1 64 132"; do set -- $cfg; echo "# $1 tile $2 splits $3"; $B --kernel attention --case $1 --attn-tile $2 --attn-splits $3 --iters 100 | grep "case=$1 " | cut -d' ' -f2,5,6,10; done; } > $OUT/sweep.txt 2>&1
grep -h "case=" $OUT/attn_after.txt | awk '{print $2,$4,$5,$6}' ; grep -h trace $OUT/probe_after.txt | sed 's/probe //' | cut -d' ' -f1,3-4,7-30; grep -h "full-flush \|split-only\|combine-only-no\|empty\|copy\|graph" $OUT/probe_after.txt | sed 's/probe //'; cat $OUT/sweep.txt; grep -hE "SUMMARY" $OUT/san.txt
