set -u
W=$(mktemp -d); KT=build/vpsim-kernel-tests
trap 'tar -czf $OUT/call2.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $W/gpu.txt
timeout 120 build/kt-bf16 --kernel attention --no-bench > $W/validate.txt 2>&1; echo "validate rc=$?"; grep -c "ok=1" $W/validate.txt; grep "ok=0" $W/validate.txt | cut -c1-200 | head -5
grep "^kernel=attention" $W/validate.txt | grep "kernel=3" | grep -o "case=[^ ]*\|max_err=[^ ]*" | paste - - | head -12

if grep -q "ok=0" $W/validate.txt; then echo "BF16 INVALID"; exit 0; fi
timeout 60 build/kt-bf16 --kernel probe --case merge --flush clean > $W/merge.txt 2>&1
grep "case=merge" $W/merge.txt | grep combine | sed 's/probe case=merge //' | cut -c1-170
for rep in 1 2; do for b in vpsim-kernel-tests kt-bf16; do for c in mla-8k mla-32k mla-128k; do
  build/$b --kernel attention --case $c --iters 40 --flush clean 2>&1 | grep "^kernel=" | grep -o "case=[^ ]*\|median_us=[^ ]*\|p10_us=[^ ]*\|p90_us=[^ ]*" | paste -s -d' ' | sed "s/^/$b /" >> $W/times.txt
done; done; done
sort -k2,2 -s $W/times.txt | sed 's/p10_us=//g; s/p90_us=//g; s/median_us=//g' | cut -c1-230
