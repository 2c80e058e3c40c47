set -u
W=$(mktemp -d)
trap 'tar -czf $OUT/call5.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $W/gpu.txt
for b in vpsim-kernel-tests kt-nooff; do
  for c in mla-32k-q8 mla-q5-rows40; do
    echo "== racecheck $b $c" >> $W/race.txt
    timeout 60 compute-sanitizer --tool racecheck build/$b --kernel attention --case $c --no-bench --attn-kernel 3 >> $W/race.txt 2>&1; echo "rc=$?" >> $W/race.txt
  done
  timeout 60 build/$b --kernel attention --no-bench --case mla- > $W/valid-$b.txt 2>&1; echo "$b valid rc=$? $(grep -c ok=1 $W/valid-$b.txt) ok, $(grep -c ok=0 $W/valid-$b.txt) bad"
done
grep -E "^== |SUMMARY" $W/race.txt
for rep in 1 2 3; do for b in vpsim-kernel-tests kt-nooff; do for c in mla-8k-h16 mla-32k-h16 mla-128k-h16 mla-32k-q8 mla-8k mla-32k mla-128k; do
  build/$b --kernel attention --case $c --iters 40 --flush clean --attn-kernel 3 2>&1 | grep "^kernel=" | grep -o "case=[^ ]*\|median_us=[^ ]*" | paste -s -d' ' | sed "s/^/$b /" >> $W/times.txt
done; done; done
sort -k2,2 -s $W/times.txt | awk '{print $1, $2, $3}' | paste -d' ' - - - - - -
for b in vpsim-kernel-tests kt-nooff; do for c in mla-128k mla-32k mla-8k-h16; do
  timeout 60 build/$b --kernel probe --case $c --flush clean > $W/probe-$b-$c.txt 2>&1
  grep -h "trace" $W/probe-$b-$c.txt | sed "s/^/$b /" | cut -c1-330
done; done
