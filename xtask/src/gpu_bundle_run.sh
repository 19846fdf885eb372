#!/usr/bin/env bash
# Runs hoplite's GPU bundle (built by `cargo xtask gpu-bundle`) and writes report.md here:
# the GPU and driver, the commit, each test's result, compute-sanitizer's findings, each
# benchmark's median and the tour's CUDA section. Whole run: under 10 minutes (the tests 200 s
# in all, HOPLITE_BUNDLE_TEST_SECONDS per test binary, default 90; compute-sanitizer 4 x 25 s;
# GrCUDA's benchmarks at GPU sizes 85 + 65 + 30 s; the CUDA benchmark 45 s; the tour 30 s).
# What decides the open questions runs first, so that a run cut short still decides them: the
# tests with asynchronous launches and with CUDA graphs (the defaults to be), then
# compute-sanitizer's racecheck and synccheck of the queued-work and one-launch tests with
# asynchronous launches, then every test as the defaults are now, then GrCUDA's rows with
# asynchronous launches.
set -uo pipefail
cd "$(dirname "$0")"
mkdir -p logs
REPORT=report.md
STARTED=$(date +%s)
PER_TEST=${HOPLITE_BUNDLE_TEST_SECONDS:-90}
DEADLINE=$(( STARTED + ${HOPLITE_BUNDLE_TEST_TOTAL_SECONDS:-200} ))

# NVRTC: HOPLITE_NVRTC_LIB if set, else the newest CUDA toolkit's.
if [ -z "${HOPLITE_NVRTC_LIB:-}" ]; then
    for lib in $(ls -d /usr/local/cuda*/lib64/libnvrtc.so* /usr/lib/x86_64-linux-gnu/libnvrtc.so* 2>/dev/null | sort -V -r); do
        if [ -f "$lib" ]; then export HOPLITE_NVRTC_LIB="$lib"; break; fi
    done
fi

{
    echo "# hoplite GPU run"
    echo
    echo '```'
    cat COMMIT
    echo "ran $(date -Iseconds) on $(hostname)"
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1 || echo "nvidia-smi: not found"
    echo "NVRTC: ${HOPLITE_NVRTC_LIB:-not found}"
    echo '```'
    echo
    echo "## Tests"
    echo
    echo "| binary | passed | failed | ignored | exit |"
    echo "|---|---:|---:|---:|---|"
} > "$REPORT"

total_failed=0
failures=""
# run_test NAME BINARY [VAR=VALUE ...]: one test binary (with VAR=VALUE ... in its
# environment), one row.
run_test() {
    local name=$1 bin=$2
    shift 2
    local left=$(( DEADLINE - $(date +%s) ))
    local limit=$(( left < PER_TEST ? left : PER_TEST ))
    if [ "$limit" -le 0 ]; then
        echo "| $name | - | - | - | not run: out of time |" >> "$REPORT"
        return
    fi
    # One test thread (device tests share the GPU); --nocapture keeps each skip's reason.
    env "$@" timeout "$limit" "$bin" --test-threads=1 --nocapture > "logs/$name.log" 2>&1
    local rc=$?
    local summary passed failed ignored exit_note names
    summary=$(grep '^test result:' "logs/$name.log" | tail -1)
    passed=$(echo "$summary" | sed -n 's/.* \([0-9]*\) passed.*/\1/p')
    failed=$(echo "$summary" | sed -n 's/.* \([0-9]*\) failed.*/\1/p')
    ignored=$(echo "$summary" | sed -n 's/.* \([0-9]*\) ignored.*/\1/p')
    case $rc in 0) exit_note=ok ;; 124) exit_note="timed out after ${limit}s" ;; *) exit_note="exit $rc" ;; esac
    echo "| $name | ${passed:--} | ${failed:--} | ${ignored:--} | $exit_note |" >> "$REPORT"
    if [ "$rc" -ne 0 ]; then
        total_failed=$(( total_failed + 1 ))
        # libtest lists the failed tests, indented, under its last `failures:` header.
        names=$(awk '/^failures:$/ { n++; list = ""; next } n >= 2 && /^    / { list = list " " $1 } END { print list }' "logs/$name.log")
        failures="$failures [$name:${names:- $exit_note}]"
    fi
}
# First what decides the defaults: launches that return once queued
# (backends/cuda/src/pending.rs) and CUDA graphs built in stages by `create_graph(&cuda, ..)`,
# each alone and both at once. The most telling first, in case time runs out.
for name in test-queued_work test-one_launch; do
    if [ -x "tests/$name" ]; then
        run_test "$name-async" "tests/$name" HOPLITE_CUDA_LAUNCHES=async
    fi
done
if [ -x tests/test-conformance ]; then
    run_test "test-conformance-cuda-graphs-async" tests/test-conformance HOPLITE_CUDA_GRAPHS=device \
        HOPLITE_CUDA_LAUNCHES=async
    run_test "test-conformance-cuda-graphs" tests/test-conformance HOPLITE_CUDA_GRAPHS=device
fi
for name in test-conformance test-dag test-dag_other_instance test-graph test-grcuda test-reduce \
    test-mirror test-library test-raw test-token test-peer lib-hoplite_cuda; do
    if [ -x "tests/$name" ]; then
        run_test "$name-async" "tests/$name" HOPLITE_CUDA_LAUNCHES=async
    fi
done

# compute-sanitizer (CUDA toolkit) on the tests of queued work and of the one launch with
# asynchronous launches: racecheck (shared-memory hazards) and synccheck (barriers).
SANITIZER=$(command -v compute-sanitizer || ls -d /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null | sort -V -r | head -1)
{
    echo
    echo "## compute-sanitizer (launches async)"
    echo
    echo "| tool | binary | errors | exit |"
    echo "|---|---|---:|---|"
} >> "$REPORT"
for tool in racecheck synccheck; do
    for name in test-queued_work test-one_launch; do
        if [ -z "$SANITIZER" ] || [ ! -x "$SANITIZER" ]; then
            echo "| $tool | $name | - | not run: compute-sanitizer not found |" >> "$REPORT"
            continue
        fi
        [ -x "tests/$name" ] || continue
        HOPLITE_CUDA_LAUNCHES=async timeout 25 "$SANITIZER" --tool "$tool" --error-exitcode 86 \
            "tests/$name" --test-threads=1 > "logs/sanitizer-$tool-$name.log" 2>&1
        rc=$?
        errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) error.*/\1/p' "logs/sanitizer-$tool-$name.log" | tail -1)
        case $rc in 0) note=ok ;; 86) note="errors found" ;; 124) note="timed out after 25s" ;; *) note="exit $rc" ;; esac
        echo "| $tool | $name | ${errors:--} | $note |" >> "$REPORT"
        [ "$rc" -eq 86 ] && total_failed=$(( total_failed + 1 )) && failures="$failures [$tool:$name]"
    done
done
{
    echo
    echo "| binary (launches and graphs as the defaults are now) | passed | failed | ignored | exit |"
    echo "|---|---:|---:|---:|---|"
} >> "$REPORT"
for bin in tests/*; do
    run_test "$(basename "$bin")" "$bin"
done
{
    echo
    echo "Skipped checks (each prints why):"
    echo
    echo '```'
    grep -h -i 'skipped' logs/*.log | cut -c1-200 | sort | uniq -c | head -30
    echo '```'
    if [ -n "$failures" ]; then
        echo
        echo "Failed: $failures"
    fi
} >> "$REPORT"

echo >> "$REPORT"
echo "## Benchmarks (median of a short run)" >> "$REPORT"
echo >> "$REPORT"
echo "| benchmark | median |" >> "$REPORT"
echo "|---|---:|" >> "$REPORT"
# criterion prints the name, then `time: [low median high]` on the same or the next line.
medians() {
    grep -i 'skipped' "$1" | sed 's/^/| (skipped) /; s/$/ | - |/'
    awk '
        /time:/ {
            line = $0; sub(/.*time: *\[/, "", line); split(line, f, " ");
            name = (index($0, "time:") > 1 && $1 != "time:") ? $1 : last;
            printf "| %s | %s %s |\n", name, f[3], f[4];
            next
        }
        NF > 0 && $1 !~ /^(Benchmarking|Found|Warning|change:|[0-9]+)/ { last = $1 }
    ' "$1"
}
# GrCUDA's benchmarks, only their GPU rows (`grcuda-*/cuda-*`; the host rows are measured on
# the host). First with launches that return once queued: the DAG (async and sync), eager
# launches and the hand-written streams, the rows GrCUDA's goal (DAG async against DAG sync,
# and within 1.05x of the hand-written streams) is read from; marked `async:`.
HOPLITE_CUDA_LAUNCHES=async timeout 85 benches/grcuda --bench '/cuda-(hoplite|sync|eager|streams)' \
    --warm-up-time 0.5 --measurement-time 1 --noplot > logs/grcuda-async.log 2>&1
medians logs/grcuda-async.log | sed 's/^| /| async: /' >> "$REPORT"
# The same with every launch asking for a quarter of the device (`with_desired_occupancy(25)`),
# as GrCUDA's runs launch small fixed grids that leave room for other streams' kernels;
# marked `async 25%:`.
HOPLITE_CUDA_LAUNCHES=async HOPLITE_GRCUDA_OCCUPANCY=25 timeout 65 benches/grcuda \
    --bench '/cuda-(hoplite|sync|streams)' \
    --warm-up-time 0.5 --measurement-time 1 --noplot > logs/grcuda-async-25.log 2>&1
medians logs/grcuda-async-25.log | sed 's/^| /| async 25%: /' >> "$REPORT"
# Then with launches that wait, as every earlier GPU run measured them: the DAG, and the
# replay (recorded once, replayed as a CUDA Graph).
timeout 30 benches/grcuda --bench '/cuda-(hoplite|replay)' \
    --warm-up-time 0.5 --measurement-time 1 --noplot > logs/grcuda.log 2>&1
medians logs/grcuda.log >> "$REPORT"
timeout 45 benches/cuda --bench --warm-up-time 0.5 --measurement-time 1 --noplot > logs/bench.log 2>&1
medians logs/bench.log >> "$REPORT"

timeout 30 examples/tour > logs/tour.log 2>&1
tour_rc=$?
{
    echo
    echo "## Tour (exit $tour_rc)"
    echo
    echo '```'
    sed -n '/-- CUDA/,/^$/p' logs/tour.log
    echo '```'
} >> "$REPORT"

echo "whole run: $(( $(date +%s) - STARTED )) s" >> "$REPORT"
echo "wrote $(pwd)/$REPORT"
cat "$REPORT"
[ "$total_failed" -eq 0 ] && [ "$tour_rc" -eq 0 ]
