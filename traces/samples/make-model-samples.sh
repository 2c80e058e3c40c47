#!/usr/bin/env bash
# Regenerates the MODELLED samples of this folder (no GPU needed): model results, sweeps and the plan.
# The measured samples (h200-*, bench-allreduce-*) need the GPU machine; README.md gives their commands.
#
#   traces/samples/make-model-samples.sh [VPSIM]     (VPSIM defaults to build/vpsim; run from the repo root)
#
# Output is deterministic for a given binary and config tree, so a diff after running this shows what a
# model or config change did to the samples (and so to the report).
set -euo pipefail
cd "$(dirname "$0")/../.."
V=${1:-build/vpsim}
# SAMPLES_OUT: write elsewhere (make samples-check writes to a scratch folder and compares).
S=${SAMPLES_OUT:-traces/samples}
mkdir -p "$S"
BACKENDS=nccl,oneshot,twoshot,push,mpi,none

"$V" model configs/default.yaml --format json --out $S/model-default-rtx6000.results.json
"$V" model configs/default.yaml --system configs/systems/h200-1x.yaml --backend none --format json \
    --out $S/model-default-h200-none.results.json
"$V" model configs/default.yaml --system configs/systems/h200-1x.yaml --backend none --ops --format json \
    --out $S/model-default-h200-none-ops.results.json
"$V" plan configs/default.yaml --format json --out $S/default.plan.json

# Draft tokens: with topk=1 the sweep ties num_draft_tokens to steps + 1 (a column of its own). The
# acceptance vector is extended to 5 positions (assumed decay, like the scenario's own 0.75, 0.6).
"$V" sweep configs/default.yaml --vary speculative.steps=1..5 \
    --set 'speculative.acceptance=[0.75,0.6,0.5,0.4,0.3]' --backend $BACKENDS --restart --out $S/sweep-draft-tokens.csv
"$V" sweep configs/default.yaml --vary parallel.tp=1,2,4,8 --backend $BACKENDS --restart --out $S/sweep-tp.csv
"$V" sweep configs/default.yaml --vary workload.context=1024,2048,4096,8192,16384,32768,65536,131072 \
    --backend $BACKENDS --restart --out $S/sweep-context.csv

# The optimization plan ranked (vpsim compare; the report draws it).
"$V" compare configs/default.yaml --variants configs/plans/verify-faster.yaml --format json \
    --out $S/compare-verify-faster.json

# A server trace read back (vpsim import-trace on the H200 fixture, bench/trace_fixture.py) and the model
# of the system file it writes: the report draws them side by side (model-<the import's file> pairs them).
imp_tmp=$(mktemp -d)
trap 'rm -rf "$imp_tmp"' EXIT
"$V" import-trace traces/samples/fixture-h200-graph.json.gz --system configs/systems/h200-1x.yaml \
    --kernels traces/samples/trace-fixture-kernels.yaml --out "$imp_tmp/imported.yaml" \
    --breakdown $S/import-fixture-h200-graph.results.json > /dev/null
"$V" model configs/default.yaml --system "$imp_tmp/imported.yaml" --backend nccl --format json \
    --out $S/model-import-fixture-h200-graph.results.json
