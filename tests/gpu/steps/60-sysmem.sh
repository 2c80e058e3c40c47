# shellcheck shell=bash
# --p2p sysmem on CUDA (sourced by tests/gpu/run_gpu_tests.sh after 20-exec.sh, whose
# expect_json it uses; run_step, ok_step, fail_step and MPIRUN come from tests/gpu/harness.sh). The
# custom kernels with every buffer a peer touches (flags, stage, scratch, push landing lines) in pinned
# host memory mapped into every rank: on GPU 0 with virtual ranks (the protocol over host memory), and
# across two GPUs where there are two (the PCIe host-memory path). Every bench step checks its results
# (ok_step fails on a wrong element); at the end no shared-memory segment of vpsim may be left behind,
# not even after a rank was killed.
vpsim_shm() { find /dev/shm -maxdepth 1 -name 'vpsim-*' 2>/dev/null | wc -l; }
shm_before=$(vpsim_shm)
# Sizes up to 1 MiB at 2 ranks, 256 KiB at 4: push's landing lines (2 x ranks x 16 B per 4 elements) then
# need at most 8 MiB + 4 MiB of /dev/shm per rank, well inside a container's default 64 MiB.
SYSMEM_SIZES=2,18,1000,43008,65538,1048576
V0=(env CUDA_VISIBLE_DEVICES=0) # virtual ranks share GPU 0

for np in 2 4; do
    sizes=$SYSMEM_SIZES
    [ "$np" -gt 2 ] && sizes=2,18,1000,43008,65538,262144
    ok_step "sysmem-eager-np$np" "${V0[@]}" "${MPIRUN[@]}" -np "$np" "$VPSIM" bench-allreduce --backend oneshot,twoshot,push \
        --p2p sysmem --sizes "$sizes" -n 20 -w 2 --check
    ok_step "sysmem-graph-np$np" "${V0[@]}" "${MPIRUN[@]}" -np "$np" "$VPSIM" bench-allreduce --backend oneshot,twoshot,push \
        --p2p sysmem --sizes "$sizes" -n 20 -w 2 --check --graph --format json --out "$LOGS/sysmem-graph-np$np.json"
done
# The mode is in the result and in every custom backend's environment; graphs really were captured.
run_step sysmem-graph-json expect_json "$LOGS/sysmem-graph-np2.json" \
    'd["p2p"] == "sysmem" and d["wrong_total"] == 0 and len(d["backends"]) == 3 and all(b["graph"] and b["environment"]["custom_p2p"].startswith("sysmem (") and "host memory" in b["environment"]["custom_p2p_check"] for b in d["backends"])'
# The header line says it too.
run_step sysmem-header bash -c "\"\$@\" | grep -F -- '--p2p sysmem (custom backends'" _ \
    "${V0[@]}" "${MPIRUN[@]}" -np 2 "$VPSIM" bench-allreduce --backend push --p2p sysmem --sizes 43008 -n 3 -w 1
# The other collectives of the custom backends (all staged through host memory) and a per-size policy.
for kind in reduce_scatter allgather; do
    ok_step "sysmem-$kind-np2" "${V0[@]}" "${MPIRUN[@]}" -np 2 "$VPSIM" bench-allreduce --collective "$kind" \
        --backend oneshot,twoshot,push --p2p sysmem --sizes 1000,43008,1048576 -n 5 -w 1 --check
done
ok_step sysmem-policy-graph-np4 "${V0[@]}" "${MPIRUN[@]}" -np 4 "$VPSIM" bench-allreduce --policy "oneshot<=1K,twoshot<=64K,push" \
    --p2p sysmem --sizes 1000,43008,262144 -n 10 -w 1 --check --graph
# A quick replay per backend, checked, and the fused allreduce + residual + RMSNorm kernels.
for b in oneshot twoshot push; do
    ok_step "sysmem-run-$b-np2" "${V0[@]}" "${MPIRUN[@]}" -np 2 "$VPSIM" run configs/tiny.yaml --device cuda --backend "$b" \
        --p2p sysmem --check --iters 3 --warmup 1 --out "$LOGS/sysmem-run-$b.json"
done
run_step sysmem-run-json expect_json "$LOGS/sysmem-run-oneshot.json" \
    'd["environment"]["custom_p2p"].startswith("sysmem (") and d["measured"]["check_failures"] == 0'
for b in oneshot push; do
    ok_step "sysmem-fusion-$b-np2" "${V0[@]}" "${MPIRUN[@]}" -np 2 "$VPSIM" run configs/tiny.yaml --device cuda --backend "$b" \
        --p2p sysmem --set fusion.allreduce_residual_norm=true --check --iters 3 --warmup 1
done
# A rank killed mid-sweep: the job fails (no hang), and the segments were unlinked at init already.
VPSIM_COMM_TIMEOUT_MS=2000 fail_step sysmem-kill-np2 120 'inject-fault kill' \
    "${V0[@]}" "${MPIRUN[@]}" -np 2 "$VPSIM" bench-allreduce --backend oneshot --p2p sysmem --sizes 43008 -n 400 -w 0 \
    --inject-fault kill:1:60

# One GPU per rank: the host-memory path across PCIe (no P2P needed).
if [ "$(gpu_count)" -ge 2 ]; then
    ok_step sysmem-gpus-eager-np2 "${MPIRUN[@]}" -np 2 "$VPSIM" bench-allreduce --backend oneshot,twoshot,push --p2p sysmem \
        --sizes "$SYSMEM_SIZES" -n 20 -w 2 --check
    ok_step sysmem-gpus-graph-np2 "${MPIRUN[@]}" -np 2 "$VPSIM" bench-allreduce --backend oneshot,twoshot,push --p2p sysmem \
        --sizes "$SYSMEM_SIZES" -n 20 -w 2 --check --graph
    ok_step sysmem-gpus-run-oneshot-np2 "${MPIRUN[@]}" -np 2 "$VPSIM" run configs/tiny.yaml --device cuda --backend oneshot \
        --p2p sysmem --check --iters 3 --warmup 1
else
    echo "=== sysmem-gpus: SKIPPED: $(gpu_count) GPU(s) visible; the PCIe host-memory path needs 2"
fi

# shm_check BEFORE: one result line; no more vpsim segments than before these steps.
shm_check() {
    local n
    n=$(vpsim_shm)
    echo "vpsim segments in /dev/shm: $n (before these steps: $1) ok=$((n <= $1)) "
}
run_step sysmem-no-shm-left shm_check "$shm_before"
