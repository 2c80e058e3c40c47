#!/usr/bin/env bash
# "A new backend is one list line and one file" (docs/extending.md), held to it: a copy of the tree gets
# the list line of tests/extend/comm_dummy.c's backend and that file, nothing else; the copy builds
# (CUDA=0: the host parts), and the new backend works through every door it should: --backend in
# bench-allreduce with --check on several ranks, run --check, model mode with its formula family, a
# policy naming it, --help's list. Exit 0 when all hold; the first failure says which.
#   tests/extend/new_backend.sh [WORKDIR]      (from the repo root; make check runs it)
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${1:-$(mktemp -d /tmp/vpsim-extend-XXXXXX)}
[ -n "${KEEP:-}" ] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tree"
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$work/tree"
cd "$work/tree"

# The one list line: a HOST backend, a real allreduce (policy 1), no measured table, the host formula
# family, no peer access, no fused norm, a plain kernel-class launch, no IPC workspace, in place, not
# probed.
line='    X(DUMMY, "dummy", dummy, HOST, 1, 0, host, NONE, 0, HOST, 0, 1, 0, "extension test: a host ring of MPI sends") \'
awk -v add="$line" '{ print } /^#define CFG_BACKEND_LIST\(X\)/ { print add }' sim/config/cfg_lists.h > cfg_lists.h.new
mv cfg_lists.h.new sim/config/cfg_lists.h
grep -q 'X(DUMMY' sim/config/cfg_lists.h || { echo "new_backend: the list line did not go in" >&2; exit 1; }
# The one file.
cp tests/extend/comm_dummy.c sim/comm/comm_dummy.c

fail() { echo "new_backend: $*" >&2; exit 1; }
echo "new_backend: building a copy with one list line and sim/comm/comm_dummy.c (CUDA=0)"
make -j"$(nproc)" CUDA=0 Q=@ all > build.log 2>&1 || { tail -30 build.log >&2; fail "the copy does not build"; }
V=build/vpsim
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)
"${MPIRUN[@]}" -np 3 "$V" bench-allreduce --device cpu --backend dummy,mpi --check -b 8 -e 64K -n 3 > bench.txt 2>&1 \
    || { cat bench.txt >&2; fail "bench-allreduce --backend dummy --check failed"; }
grep -q '^# backend dummy (timed eager)' bench.txt || { cat bench.txt >&2; fail "no dummy table"; }
# Captured, never piped into grep -q: grep leaves at its first match, and vpsim reports the closed pipe
# (EPIPE) as a failed write, so a pipe would race.
"$V" bench-allreduce --device cpu --help > help.txt 2>&1 || { cat help.txt >&2; fail "bench-allreduce --help failed"; }
grep -q 'default on cpu: .*dummy' help.txt || { cat help.txt >&2; fail 'its --help does not list it'; }
"${MPIRUN[@]}" -np 2 "$V" run configs/tiny.yaml --device cpu --backend dummy --check --iters 2 > run.txt 2>&1 \
    || { cat run.txt >&2; fail "run --backend dummy --check failed"; }
grep -q 'check                    passed' run.txt || { cat run.txt >&2; fail "run --check gave no verdict"; }
"$V" model --help > model-help.txt 2>&1 || { cat model-help.txt >&2; fail "model --help failed"; }
grep -q 'dummy' model-help.txt || fail 'model --help does not list it'
"$V" model configs/default.yaml --backend dummy,mpi > model.txt 2>&1 || { cat model.txt >&2; fail "model --backend dummy"; }
grep -q '^dummy ' model.txt || { cat model.txt >&2; fail "model mode has no dummy row"; }
grep -q 'dummy .*formula: host-staged MPI' model.txt || { cat model.txt >&2; fail "model mode did not price it with its family"; }
"${MPIRUN[@]}" -np 2 "$V" run configs/tiny.yaml --device cpu --allreduce-policy 'dummy<=4K,mpi' --check --iters 1 \
    > policy.txt 2>&1 || { cat policy.txt >&2; fail "a policy naming dummy failed"; }
echo "new_backend: ok: one list line + one file gave a backend that builds, checks on 2-3 ranks, runs a replay, a policy and a model row"
