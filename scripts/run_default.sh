#!/usr/bin/env bash
# `make run`: the main job on the default scenario, as far as this machine allows.
#   8+ GPUs: mpirun -np 8 vpsim run configs/default.yaml (real GEMMs, real NCCL collectives)
#   1-7 GPUs: one rank's compute measured here, collectives replaced by the delays model mode predicts
#             for the target box (backend model) -> projected tok/s for 8x RTX PRO 6000 PCIe
#   no GPU:  model mode only (vpsim model), every backend
set -euo pipefail
cd "$(dirname "$0")/.."
VPSIM=${VPSIM:-build/vpsim}
SCENARIO=${SCENARIO:-configs/default.yaml}
gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
    gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
fi
# Open MPI refuses root unless told (containers run as root); the flag is harmless for other users.
as_root=()
if [ "$(id -u)" = 0 ]; then as_root=(--allow-run-as-root); fi
if [ "$gpus" -ge 8 ]; then
    echo "make run: $gpus GPUs: replaying $SCENARIO on 8 ranks with NCCL" >&2
    exec mpirun "${as_root[@]}" -np 8 --bind-to none "$VPSIM" run "$SCENARIO"
elif [ "$gpus" -ge 1 ]; then
    echo "make run: $gpus GPU(s): one rank's compute, collectives modelled for the target system" >&2
    exec "$VPSIM" run "$SCENARIO" --backend model --target-system configs/systems/rtx-pro-6000-8x-pcie.yaml
else
    echo "make run: no GPU here: model mode (vpsim model) for every backend" >&2
    exec "$VPSIM" model "$SCENARIO"
fi
