#!/bin/sh
# scripts/run-tests.sh: what `make test` runs, in order: installs the test packages that are
# missing (scripts/install-deps.sh --test: as root directly, as a user through sudo); the
# test suite, every test of it but those the next part runs; the suite built with ASan+UBSan
# (build-asan/), its unit and component tests and the integration tests of suite
# "integration-asan" (ASAN_TOO in tests/support.h); every fuzz target for FUZZ_SECONDS
# (build-fuzz/; make test gives 1, built at -O0).
# Why not every integration test under ASan: they spend their time sampling for a set
# number of seconds, the same code paths over and over, and took 5.5 of the 12 minutes
# of `make test`. What ASan and UBSan check is the profiler's own code: the chosen ones run
# each part of it (hostile ELF files, processes that exit and are forgotten, dlopen, debug
# links, JIT maps, table unwinding, Python frames, windows to files and stdout with maps
# drained, push, cgroups, signals) and take about a third of the time. Every test case is
# in a suite, and every test file has cases this pass runs: a unit test in tests/main.cpp
# fails otherwise. Every test runs once: the "integration" tests in the first pass, on the
# plain build users run; the unit, component and "integration-asan" tests in the ASan pass,
# with the plain build's checks and more (the first pass ran the unit and component tests
# too, 40 s of make test's 12 minutes for nothing the second does not check).
# `make check` alone runs every test on the plain build.
# Each part runs even when one before it failed. Run by a user, the suites run as root
# through sudo; a last check then fails if they left anything in the tree that the user
# does not own (which `make clean` could not remove). The last line is one total,
# "N passed, N failed": every doctest case of both suites plus one per fuzz target, plus
# that check; a part that could not run to its own total (a build failure, a crash at
# exit) counts as failed. Exit status 1 when anything failed.
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
# What the ASan+UBSan pass runs (doctest's filters; TEST_ARGS, when given, runs instead).
ASAN_TESTS="-ts=unit,component,integration-asan"
# What the first pass runs: the rest.
PLAIN_TESTS="-ts=integration"
JOBS=${JOBS:-$(nproc)}
passed=0
failed=0
skipped=0
logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT

part() {
	name=$1
	shift
	echo "==== $name: $*"
	start=$(date +%s)
	{
		"$@" 2>&1
		echo $? >"$logs/status"
	} | tee "$logs/out"
	status=$(cat "$logs/status")
	total=$(grep -E '^[0-9]+ passed, [0-9]+ failed$' "$logs/out" | tail -1)
	if [ -z "$total" ]; then
		failed=$((failed + 1))
		echo "==== $name: no total printed (exit $status): counted as 1 failed"
		return
	fi
	# A suite's skipped tests (outside CI only: there a skip fails) are in neither count.
	k=$(grep -E '^[0-9]+ skipped:$' "$logs/out" | tail -1)
	k=${k%% *}
	skipped=$((skipped + ${k:-0}))
	p=${total%% passed*}
	f=${total#*passed, }
	f=${f%% failed}
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$status" != 0 ] && [ "$f" = 0 ]; then
		failed=$((failed + 1))
		echo "==== $name: exit $status after a clean total: counted as 1 failed"
	fi
	echo "==== $name: $total in $(($(date +%s) - start)) s"
}

if ! scripts/install-deps.sh --test; then
	echo "==== the test packages could not be installed: nothing was run"
	echo "0 passed, 1 failed"
	exit 1
fi

part "test suite" $MAKE -j"$JOBS" check TEST_ARGS="${TEST_ARGS:-$PLAIN_TESTS}"
part "test suite under ASan+UBSan" $MAKE -j"$JOBS" SANITIZE=1 check TEST_ARGS="${TEST_ARGS:-$ASAN_TESTS}"
part "fuzz targets" $MAKE -j"$JOBS" fuzz

# Root can remove anything, and a root-owned checkout is root's own: the check is a user's.
if [ "$(id -u)" != 0 ]; then
	foreign=$(find . ! -user "$(id -u)" -print 2>/dev/null)
	if [ -z "$foreign" ]; then
		passed=$((passed + 1))
		echo "==== the tree is $(id -un)'s: nothing left by root"
	else
		failed=$((failed + 1))
		echo "==== $(echo "$foreign" | wc -l) files in the tree are not $(id -un)'s (make clean cannot remove them):"
		echo "$foreign" | head -20
	fi
fi

[ "$skipped" = 0 ] || echo "==== $skipped tests skipped (a tool or root missing; named above): not counted as passed"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
