#!/usr/bin/env bash
# Call 3: bulk-copy tiles + vector epilogue: validate (device limits, sm_120 budget, sanitizer), A/B, probes, sweep.
B=devtmp/attn/vpsim-kernel-tests; A=devtmp/attn/vpsim-kernel-tests.before
$B --kernel attention --iters 100 > $OUT/attn_after.txt 2>&1; echo "after rc=$?"
$B --kernel attention --smem-budget 101376 --no-bench --quick > $OUT/sm120.txt 2>&1; echo "sm120-budget rc=$? $(tail -1 $OUT/sm120.txt)"
for t in racecheck synccheck memcheck; do timeout 120 compute-sanitizer --tool $t --error-exitcode 9 $B --kernel attention --case tiny --no-bench > $OUT/san_$t.txt 2>&1; echo "san $t tiny rc=$?"; done
timeout 150 compute-sanitizer --tool racecheck --error-exitcode 9 $B --kernel attention --case mla-8k --no-bench >> $OUT/san_racecheck.txt 2>&1; echo "san racecheck mla-8k rc=$?"
{ for r in 1 2 3; do for bin in $A $B; do echo "# $bin round $r"; $bin --kernel attention --iters 100 | grep -E "case=(mla-8k|mla-32k|mla-128k|gqa-8k-q3|gqa-32k-q3|tiny-mla) " ; done; done; } > $OUT/ab.txt 2>&1
$B --kernel probe --iters 100 > $OUT/probe_after.txt 2>&1; echo "probe rc=$?"
{ for cfg in "64 64" "64 128" "32 128" "32 64"; do set -- $cfg; echo "# mla-8k tile $1 splits $2"; $B --kernel attention --case mla-8k --attn-tile $1 --attn-splits $2 --iters 100 | grep case= | cut -d' ' -f2,6-9; done
for cfg in "64 32" "64 64" "32 64" "32 128"; do set -- $cfg; echo "# gqa-8k-q3 tile $1 splits $2"; $B --kernel attention --case gqa-8k-q3 --attn-tile $1 --attn-splits $2 --iters 100 | grep case= | cut -d' ' -f2,6-9; done; } > $OUT/sweep_after.txt 2>&1
grep -h "case=" $OUT/attn_after.txt | awk '{print $2,$4,$5,$6}' ; grep -h trace $OUT/probe_after.txt | sed 's/probe //'; grep -h "full-flush \|split-only\|combine-only-no\|empty\|copy" $OUT/probe_after.txt | sed 's/probe //'; cat $OUT/sweep_after.txt; grep -E "ERROR SUMMARY|========= [A-Z]" $OUT/san_*.txt | head
