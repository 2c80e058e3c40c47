set -u
W=$(mktemp -d); KT=build/vpsim-kernel-tests
trap 'tar -czf $OUT/call3.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $W/gpu.txt
for cl in 2 16 0; do
  echo "== validate kernel=3 cluster=$cl" >> $W/validate.txt
  timeout 60 $KT --kernel attention --no-bench --attn-kernel 3 --attn-cluster $cl >> $W/validate.txt 2>&1; echo "rc=$?" >> $W/validate.txt
done
for c in mla-32k-q1 mla-batch3; do for tool in racecheck synccheck; do
  echo "== $tool $c cluster=2" >> $W/validate.txt
  timeout 60 compute-sanitizer --tool $tool $KT --kernel attention --case $c --no-bench --attn-cluster 2 >> $W/validate.txt 2>&1; echo "rc=$?" >> $W/validate.txt
done; done
grep -E "^== |^rc=|ok=0|SUMMARY|failures" $W/validate.txt | head -40
grep "kernel=attention" $W/validate.txt | grep "case=mla" | grep -o "case=[^ ]*\|ok=.\|cluster=[0-9]*" | paste - - - | sort | uniq -c | head -40
if grep -q "ok=0" $W/validate.txt; then echo "VALIDATION FAILED: stop"; grep "ok=0" $W/validate.txt | head; exit 0; fi
S="0:0:0:3:1,0:0:0:3:2,0:0:0:3:1,0:0:0:3:2,0:0:0:3:1,0:0:0:3:2"
OUT=$W/sweep ATTN_CASES="mla-8k mla-32k mla-128k" FLUSHES=clean ATTN_ITERS=40 ATTN_SWEEP="$S" PROBE_CASE="" timeout 200 bash bench/attn_sweep.sh > $W/sweep.log 2>&1
awk '{for(i=1;i<=NF;i++){split($i,kv,"="); f[kv[1]]=substr($i,length(kv[1])+2)} print f["case"], f["median_us"], f["p10_us"], f["p90_us"], f["info"]}' $W/sweep/sweep.txt | sed -E 's/splits=.*cluster=/c=/' | paste -d' ' - - - - - -
for cl in 1 2; do for c in mla-8k mla-32k mla-128k; do
  timeout 60 $KT --kernel probe --case $c --flush clean --attn-cluster $cl > $W/probe-$c-$cl.txt 2>&1
  grep -h "trace\|variant=full-flush \|split-only" $W/probe-$c-$cl.txt | sed "s/^/cl=$cl /" | cut -c1-340
done; done
