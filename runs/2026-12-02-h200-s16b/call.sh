# The device call that made this folder (kind nvidia-h200, 2026-12-02 01:21 UTC, binaries of vpsim f3e30d0
# built on the CPU VM and carried as build/vpsim, build/vpsim-kernel-tests; $OUT/w tarred as s16b.tgz).
set -u; S=$SECONDS; W=$OUT/w; mkdir -p $W/trace $W/heldout
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/smi-before.txt 2>&1
timeout 100 python3 bench/trace_fixture.py --plan traces/samples/default.plan.json --out-dir $W/trace > $W/trace/fixture.log 2>&1
V=build/vpsim
for c in $(python3 bench/heldout_cases.py --list | awk '{print $1}'); do
  mapfile -t A < <(python3 bench/heldout_cases.py --sets "$c")
  timeout 60 $V run configs/default.yaml --system configs/systems/h200-1x-probed.yaml --backend none --iters 20 --warmup 3 \
      --instrumented 3 --class-cost "${A[@]}" --out $W/heldout/run-$c.json > $W/heldout/run-$c.log 2>&1 || echo "case $c rc=$?"
done
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv > $W/smi-after.txt 2>&1
python3 bench/heldout.py $W/heldout configs/systems/h200-1x-probed.yaml --json $W/heldout-probed.json > $W/heldout-probed.md 2>&1
