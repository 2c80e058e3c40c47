set -u
W=$(mktemp -d); KT=build/vpsim-kernel-tests; KS=build/split-kt
trap 'tar -czf $OUT/call7.tgz -C $W .' EXIT
nvidia-smi --query-gpu=name,uuid,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee $W/gpu.txt
for kn in 1 2; do timeout 40 $KT --kernel attention --no-bench --quick --attn-kernel $kn > $W/main-k$kn.txt 2>&1; echo "main kernel $kn rc=$? ok=$(grep -c ok=1 $W/main-k$kn.txt) bad=$(grep -c ok=0 $W/main-k$kn.txt)"; done
timeout 50 $KT --kernel attention --no-bench --attn-kernel 3 > $W/main-k3.txt 2>&1; echo "main kernel 3 rc=$? ok=$(grep -c ok=1 $W/main-k3.txt) bad=$(grep -c ok=0 $W/main-k3.txt)"
timeout 50 $KS --kernel attention --no-bench --attn-kernel 3 > $W/split-k3.txt 2>&1; echo "split kernel 3 rc=$? ok=$(grep -c ok=1 $W/split-k3.txt) bad=$(grep -c ok=0 $W/split-k3.txt)"
grep "ok=0" $W/split-k3.txt | cut -c1-160 | head -5
grep "wgs=2" $W/split-k3.txt | grep -o "case=[^ ]*\|max_err=[^ ]*\|smem=[0-9]*" | paste - - - | head
if ! grep -q "ok=0" $W/split-k3.txt; then
  for c in mla-128k-h16 mla-32k-h16 mla-8k-h16 mla-32k-q8; do
    timeout 25 $KS --kernel attention --case $c --iters 40 --flush clean --attn-sweep 0:0:0:2,0:0:0:3,0:0:0:2,0:0:0:3 2>&1 | grep "^kernel=" >> $W/split-sweep.txt
  done
  awk '{for(i=1;i<=NF;i++){split($i,kv,"="); f[kv[1]]=substr($i,length(kv[1])+2)} print f["case"], f["median_us"], f["p10_us"], f["p90_us"], f["info"]}' $W/split-sweep.txt | sed -E 's/splits=.*kernel=/k=/'
fi
