set -u
W=$(mktemp -d); KT=build/vpsim-kernel-tests
trap 'tar -czf $OUT/call2.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $W/gpu.txt
for cl in 1 2 16; do
  echo "== validate kernel=3 cluster=$cl" >> $W/validate.txt
  timeout 60 $KT --kernel attention --no-bench --attn-kernel 3 --attn-cluster $cl >> $W/validate.txt 2>&1; echo "rc=$?" >> $W/validate.txt
done
echo "== validate default (auto cluster)" >> $W/validate.txt
timeout 60 $KT --kernel attention --no-bench >> $W/validate.txt 2>&1; echo "rc=$?" >> $W/validate.txt
echo "== validate 99KB" >> $W/validate.txt
timeout 60 $KT --kernel attention --no-bench --smem-budget 101376 >> $W/validate.txt 2>&1; echo "rc=$?" >> $W/validate.txt
for tool in racecheck memcheck synccheck; do
  echo "== $tool mla-batch3" >> $W/validate.txt
  timeout 60 compute-sanitizer --tool $tool $KT --kernel attention --case mla-batch3 --no-bench >> $W/validate.txt 2>&1; echo "rc=$?" >> $W/validate.txt
done
grep -E "^== |^rc=|ok=0|SUMMARY|failures" $W/validate.txt | head -40
grep "kernel=attention" $W/validate.txt | grep -o "case=[^ ]*\|ok=.\|cluster=[0-9]*" | paste - - - | sort | uniq -c | head -50
if grep -q "ok=0" $W/validate.txt; then echo "VALIDATION FAILED: stop"; grep "ok=0" $W/validate.txt | head; exit 0; fi
S="0:0:0:3:1,0:0:0:3:2,0:0:0:3:4,0:0:0:3:8,0:0:0:3:16,0:0:0:3:1,0:0:0:3:8,0:0:0:3:16"
OUT=$W/sweep ATTN_CASES="mla-8k mla-32k mla-128k" FLUSHES=clean ATTN_ITERS=40 ATTN_SWEEP="$S" PROBE_CASE="mla-8k mla-32k" PROBE_SETTINGS="0:0:0:3" PROBE_FLUSH=clean timeout 240 bash bench/attn_sweep.sh > $W/sweep.log 2>&1
awk '{for(i=1;i<=NF;i++){split($i,kv,"="); f[kv[1]]=substr($i,length(kv[1])+2)} print f["case"], f["median_us"], f["info"]}' $W/sweep/sweep.txt | sed -E 's/splits=.*cluster=/c=/' | paste -d' ' - - - - - - - -
grep -h "trace\|variant=full-flush \|split-only" $W/sweep/probe.txt | cut -c1-330 | head -30
