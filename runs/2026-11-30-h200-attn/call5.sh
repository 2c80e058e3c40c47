#!/usr/bin/env bash
# Call 5: adaptive combine block + planner without the partial-size rule: validate, A/B, probes.
B=devtmp/attn/vpsim-kernel-tests; A=devtmp/attn/vpsim-kernel-tests.before
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
$B --kernel attention --iters 100 > $OUT/attn_final.txt 2>&1; echo "final rc=$? $(tail -1 $OUT/attn_final.txt)"
$B --kernel attention --smem-budget 101376 --no-bench --quick > $OUT/valid_extra.txt 2>&1; echo "sm120-budget rc=$?"
for a in "mla-32k 300" "scalar-path 150" "mla-batch3 2" "many-rows 3" "wider-v 17" "pad-dims 40"; do set -- $a; $B --kernel attention --case $1 --attn-splits $2 --no-bench >> $OUT/valid_extra.txt 2>&1; echo "forced $1 splits $2 rc=$?"; done
for t in racecheck memcheck; do timeout 100 compute-sanitizer --tool $t --error-exitcode 9 $B --kernel attention --case 8k --no-bench > $OUT/san.txt 2>&1; echo "san $t 8k rc=$?"; done
{ for r in 1 2 3; do for bin in $A $B; do echo "# $bin round $r"; $bin --kernel attention --iters 100 | grep -E "case=(mla-8k|mla-32k|mla-128k|mla-32k-q1|mla-32k-q8|gqa-8k-q1|gqa-8k-q3|gqa-32k-q3|tiny-mla|mla-batch3|many-rows|mla-peaked-4k) " ; done; done; } > $OUT/ab.txt 2>&1
for c in 8k b16 tiny; do $B --kernel probe --case $c --iters 100; done > $OUT/probe_final.txt 2>&1; echo "probe rc=$?"
grep -h "case=" $OUT/attn_final.txt | awk '{print $2,$4,$6,$10}' | cut -c1-120; grep -h "trace" $OUT/probe_final.txt | sed 's/probe //' | cut -d' ' -f1,3-4,11-30; grep -h "full-flush \|graph-flush\|empty\|copy" $OUT/probe_final.txt | sed 's/probe //'
