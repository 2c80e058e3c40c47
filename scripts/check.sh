#!/usr/bin/env bash
# `make check` (CI's command): each stage announced, with its progress and its duration, and the total at
# the end, so that a long run is never silent for minutes. Stops at the first failing stage.
#   NPROC          parallel jobs for the builds (default: nproc)
#   FUZZ_SECONDS   how long each fuzz harness runs (make check: 30)
set -uo pipefail
cd "$(dirname "$0")/.."
NPROC=${NPROC:-$(nproc 2>/dev/null || echo 2)}
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
T0=$(date +%s)
N_STAGES=7
stage_no=0

elapsed() { local s=$(( $(date +%s) - $1 )); printf '%d:%02d' $((s / 60)) $((s % 60)); }

# stage NAME CMD...: run CMD, then say how long it took; a failure ends the check with its status.
stage() {
    local name=$1; shift
    stage_no=$((stage_no + 1))
    echo "== make check [$stage_no/$N_STAGES] $name ($(elapsed "$T0") so far)"
    local t=$(date +%s)
    "$@"
    local rc=$?
    if [ $rc -ne 0 ]; then
        echo "== make check: FAILED at [$stage_no/$N_STAGES] $name (exit $rc) after $(elapsed "$T0")"
        exit $rc
    fi
    echo "== [$stage_no/$N_STAGES] $name: ok in $(elapsed "$t")"
}

# The Criterion suite with a progress line every ~10 % of the tests; failures and the summary in full.
unit_tests() {
    local variant=$1 bin=build/vpsim-tests
    [ "$variant" = asan ] && bin=build/asan/vpsim-tests
    local total
    total=$("$bin" --list 2>/dev/null | grep -c '^[├└]') || total=0
    local t=$(date +%s)
    # Both passes wait on processes (MPI start-up, the launcher, watchdogs) more than a job per core
    # fills: the release pass at 2 jobs kept 148 s of CPU busy in 127 s (3 jobs: 108 s).
    local jobs=3
    make --no-print-directory test-unit VARIANT="$variant" TEST_JOBS="$jobs" TEST_ARGS=--verbose 2>&1 | {
        local n=0 every=$(( total / 10 + 1 )) line
        while IFS= read -r line; do
            case "$line" in
            "[PASS]"* | "[SKIP]"*)
                n=$((n + 1))
                [ $((n % every)) -eq 0 ] && echo "   $variant: $n of $total tests done, $(elapsed "$t")" ;;
            "[FAIL]"*) n=$((n + 1)); echo "$line" ;;
            "[====] Running"* | "[RUN ]"*) ;;
            *) echo "$line" ;;
            esac
        done
    }
    return "${PIPESTATUS[0]}"
}

build() { make --no-print-directory -j"$NPROC" "$@" 2>&1 | grep -v '^make\[' ; return "${PIPESTATUS[0]}"; }

stage "build (release: vpsim, tests, kernel tests)" build build-tests
stage "unit tests (release)" unit_tests release
# Side by side: the Python tests take ~30 s on about one core, the other checks ~11 s on another.
stage "Python tests, docs' examples, modelled samples, file loops" \
    make --no-print-directory -j"$NPROC" --output-sync=target test-py test-docs test-loops
stage "a new backend from one list line and one file (a CUDA=0 copy)" make --no-print-directory test-extend
stage "build (ASan + UBSan)" build VARIANT=asan build-tests
stage "unit tests (ASan + UBSan + LSan)" unit_tests asan
stage "fuzz smoke (every harness ${FUZZ_SECONDS} s at once)" make --no-print-directory -j"$NPROC" fuzz-smoke FUZZ_SECONDS="$FUZZ_SECONDS"
echo "== make check: passed in $(elapsed "$T0")"
