# shellcheck shell=bash
# Harness of the GPU test scripts, sourced by run_gpu_tests.sh and run_comm_tests.sh (and through the
# first by tests/gpu/steps/*.sh). One place counts tests and prints the summary, so that every script
# closes with the same line, "N passed, M failed", and a script can run another as one section.
#
# The sourcing script sets LOGS (a folder for the step logs) first; ok_step reads STEP_TIMEOUT (s).

passed=0
failed=0
failed_steps=()

# Several MPI ranks on few cores, as root inside containers.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# shellcheck disable=SC2034 # used by the sourcing scripts
MPIRUN=(mpirun --allow-run-as-root --oversubscribe --bind-to none)

gpu_count() {
    nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true
}

# count NAME PASSES FAILS DETAIL: add to the totals; a step with failures is listed in the summary.
count() {
    passed=$((passed + $2))
    failed=$((failed + $3))
    if [ "$3" -ne 0 ]; then
        failed_steps+=("$1: $4")
    fi
}

# note_result NAME OK(0|1) LOG DETAIL: one test. A failure shows the tail of its log right away.
note_result() {
    if [ "$2" = 1 ]; then
        count "$1" 1 0 ""
        echo "PASS $1"
    else
        count "$1" 0 1 "$4 (log $3)"
        echo "FAIL $1: $4"
        tail -n 25 "$3" | sed 's/^/    | /'
    fi
}

# run_step NAME COMMAND [ARGS...]: output to $LOGS/NAME.log and to stdout. A command that prints
# result lines (`... ok=0|1 ...`) counts one test per line; any other counts as one test, passed when
# it exits 0. A non-zero exit without a failing line (a crash, a CUDA error mid-way) adds one failure.
run_step() {
    local name=$1 log="$LOGS/$1.log" rc oks bads
    shift
    echo "=== $name: $*"
    "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    oks=$(grep -c ' ok=1 ' "$log")
    bads=$(grep -c ' ok=0 ' "$log")
    if [ $((oks + bads)) -eq 0 ]; then
        if [ "$rc" -eq 0 ]; then oks=1; else bads=1; fi
    elif [ "$rc" -ne 0 ] && [ "$bads" -eq 0 ]; then
        bads=1
    fi
    count "$name" "$oks" "$bads" "exit $rc, $bads failed; log $log"
}

# ok_step NAME COMMAND...: one test, output to the log only; passes when the command exits 0 within
# STEP_TIMEOUT and, for bench runs, reports no wrong element and no unsupported backend among those named.
ok_step() {
    local name=$1 log="$LOGS/$1.log" rc secs=${STEP_TIMEOUT:-240}
    shift
    echo "=== $name: $*" | tee "$log"
    timeout "$secs" "$@" >>"$log" 2>&1
    rc=$?
    if [ "$rc" -eq 124 ]; then
        note_result "$name" 0 "$log" "timed out after ${secs}s (a hang)"
    elif [ "$rc" -ne 0 ]; then
        note_result "$name" 0 "$log" "exit $rc"
    elif grep -q '^# backend' "$log" && ! grep -q '#wrong total: 0 (OK)' "$log"; then
        note_result "$name" 0 "$log" "wrong results"
    else
        note_result "$name" 1 "$log" ""
    fi
}

# fail_step NAME SECONDS PATTERN COMMAND...: the job must end with a non-zero status within SECONDS
# (not hang) and its output must match the extended regex PATTERN.
fail_step() {
    local name=$1 secs=$2 pattern=$3 log="$LOGS/$1.log" rc t0 t1
    shift 3
    echo "=== $name (must fail within ${secs}s, matching /$pattern/): $*" | tee "$log"
    t0=$(date +%s)
    timeout -k 10 "$secs" "$@" >>"$log" 2>&1
    rc=$?
    t1=$(date +%s)
    echo "=== exit $rc after $((t1 - t0))s" >>"$log"
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ] && [ $((t1 - t0)) -ge "$secs" ]; then
        note_result "$name" 0 "$log" "still running after ${secs}s: the surviving ranks hung"
    elif [ "$rc" -eq 0 ]; then
        note_result "$name" 0 "$log" "exited 0 although a rank failed"
    elif ! grep -v '^===' "$log" | grep -Eq "$pattern"; then
        note_result "$name" 0 "$log" "exit $rc, but no line matches /$pattern/"
    else
        note_result "$name" 1 "$log" ""
    fi
}

# run_suite NAME COMMAND...: another harness script as one section. Its output goes to stdout and
# $LOGS/NAME.log; its own summary line is added to the totals. No summary line (it died), or a non-zero
# exit with no failure counted, adds one failure.
run_suite() {
    local name=$1 log="$LOGS/$1.log" rc line p f
    shift
    echo "=== $name: $*"
    "$@" 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
    line=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1)
    if [ -z "$line" ]; then
        count "$name" 0 1 "exit $rc without a summary line; log $log"
        return
    fi
    p=${line%% passed*}
    f=${line#*, }
    f=${f%% failed}
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
    fi
    count "$name" "$p" "$f" "exit $rc, $f failed; log $log"
}

# The closing lines: the failed steps, then "N passed, M failed". Status 0 iff M = 0.
harness_summary() {
    if [ ${#failed_steps[@]} -ne 0 ]; then
        echo "failed steps:"
        printf '  %s\n' "${failed_steps[@]}"
    fi
    echo "$passed passed, $failed failed"
    [ "$failed" -eq 0 ]
}
