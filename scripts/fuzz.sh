#!/bin/sh
# scripts/fuzz.sh NAME...: runs each built fuzz target (FUZZ_OUTPUT/fuzz_NAME) for
# FUZZ_SECONDS from its seeds in tests/fuzz/corpus/NAME/, FUZZ_JOBS of them at once (one per
# CPU by default). A target passes when libFuzzer ends without a crash, leak, timeout or
# out-of-memory; a failing input is kept under FUZZ_OUTPUT/crashes/ (add it to the seeds
# once fixed). Last line: "N passed, N failed".
cd "$(dirname "$0")/.."
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
FUZZ_OUTPUT=${FUZZ_OUTPUT:-build-fuzz}
FUZZ_JOBS=${FUZZ_JOBS:-$(nproc)}
# ASan keeps 256 MB of freed memory by default to catch use after free: alone it would
# reach -rss_limit_mb=256. 16 MB of the most recent frees is plenty for one input.
export ASAN_OPTIONS="quarantine_size_mb=16:${ASAN_OPTIONS:-}"

run_one() {
	name=$1
	seeds=tests/fuzz/corpus/$name
	work=$FUZZ_OUTPUT/corpus/$name
	log=$FUZZ_OUTPUT/fuzz_$name.log
	mkdir -p "$work" "$FUZZ_OUTPUT/crashes"
	set -- -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=256 -timeout=10 -print_final_stats=1 \
		-artifact_prefix="$FUZZ_OUTPUT/crashes/$name-"
	[ -f "tests/fuzz/$name.dict" ] && set -- "$@" -dict="tests/fuzz/$name.dict"
	"$FUZZ_OUTPUT/fuzz_$name" "$@" "$work" "$seeds" >"$log" 2>&1
	echo $? >"$log.status"
}

# In batches of FUZZ_JOBS: every target takes the same FUZZ_SECONDS.
running=0
for name in "$@"; do
	run_one "$name" &
	running=$((running + 1))
	if [ "$running" -ge "$FUZZ_JOBS" ]; then
		wait
		running=0
	fi
done
wait

passed=0
failed=0
for name in "$@"; do
	log=$FUZZ_OUTPUT/fuzz_$name.log
	status=$(cat "$log.status" 2>/dev/null || echo "?")
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	corpus=$(grep -o 'corp: [0-9]*/[0-9a-zA-Z]*' "$log" | tail -1 | cut -d' ' -f2)
	seeds=$(ls "tests/fuzz/corpus/$name" | wc -l)
	if [ "$status" = 0 ]; then
		passed=$((passed + 1))
		echo "fuzz $name: ok, ${runs:-?} runs in ${FUZZ_SECONDS} s, corpus ${corpus:-?} (inputs/bytes) from $seeds seeds"
	else
		failed=$((failed + 1))
		echo "fuzz $name: FAILED (exit $status) after ${runs:-?} runs; log: $log"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|.*FUZZ_CHECK|.*runtime error|Test unit written)' "$log" | head -20
		grep -A12 '^==[0-9]*==ERROR' "$log" | grep -E '^ +#[0-9]' | head -12
	fi
done
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
