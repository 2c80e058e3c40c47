#!/usr/bin/env bash
# Session 10, second call (two H200s, NV18): the GPU suite and the comm quick section on the final tree,
# then the NCCL tuning what-if for real: NCCL's defaults against nccl.channels=1 (and protocol/algorithm
# pinned), the env plumbing read off NCCL's INFO lines, and the model of h200-2x-nvlink beside it.
export NCCL_NVLS_ENABLE=0 VPSIM=devtmp/bin/vpsim VPSIM_KERNEL_TESTS=devtmp/bin/vpsim-kernel-tests
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
M="mpirun --allow-run-as-root --bind-to none -np 2"
SYS=configs/systems/h200-2x-nvlink.yaml
nvidia-smi --query-gpu=index,name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
t0=$(date +%s)
GPU_TEST_COMM=0 GPU_TEST_LOGS=$OUT/gpu-logs timeout 240 bash tests/gpu/run_gpu_tests.sh > $OUT/gpu.txt 2>&1
echo "suite rc=$? in $(( $(date +%s) - t0 )) s: $(tail -1 $OUT/gpu.txt)"; grep -E '^FAIL' $OUT/gpu.txt | head
t1=$(date +%s)
COMM_TEST_QUICK=1 COMM_TEST_RANKS="2" COMM_TEST_SECTIONS="check b2b run policy json nccl gpus" COMM_TEST_LOGS=$OUT/comm-logs \
  timeout 200 bash tests/gpu/run_comm_tests.sh > $OUT/comm.txt 2>&1
echo "comm rc=$? in $(( $(date +%s) - t1 )) s: $(tail -1 $OUT/comm.txt)"; grep -E '^FAIL' $OUT/comm.txt | head
echo "--- NCCL tuning, real NCCL on two GPUs, graph, 43008 B and around it, 3 repeats each"
for rep in 1 2 3; do
  for t in default ch1 ch1-simple-ring; do
    case $t in
      default) S="";;
      ch1) S="--set nccl.channels=1";;
      ch1-simple-ring) S="--set nccl.channels=1 --set nccl.protocol=Simple --set nccl.algorithm=ring";;
    esac
    NCCL_DEBUG=INFO timeout 60 $M $VPSIM bench-allreduce configs/default.yaml --system $SYS --backend nccl --graph \
      --sizes 4K,43008,256K,1M --iters 50 $S --model --format json --out $OUT/nt-$t-$rep.json > $OUT/nt-$t-$rep.log 2>&1
    echo "$t rep $rep rc=$?"
  done
done
echo "--- NCCL's own view of the env (rep 1)"
for t in default ch1 ch1-simple-ring; do echo "[$t]"; grep -hE "set by environment|coll channels|NCCL_ALGO|NCCL_PROTO" $OUT/nt-$t-1.log | sed 's/^[^ ]* //' | sort -u | head -8; done
python3 - "$OUT" <<'PY'
import json,sys,glob,statistics as st
out=sys.argv[1]
for t in ("default","ch1","ch1-simple-ring"):
    per={}
    for f in sorted(glob.glob(f"{out}/nt-{t}-*.json")):
        d=json.load(open(f))
        for b in d["backends"]:
            for r in b["rows"]:
                per.setdefault(r["bytes"],[]).append((r["time_us"],r.get("model_us")))
    env=json.load(open(f"{out}/nt-{t}-1.json")).get("environment",{})
    print(t, {k:v for k,v in env.items() if "nccl" in k.lower()})
    for by,v in sorted(per.items()):
        ts=[x[0] for x in v]; m=v[0][1]
        print(f"  {by:>8} B  median {st.median(ts):7.2f} us  min {min(ts):7.2f}  max {max(ts):7.2f}  model {m}")
PY
