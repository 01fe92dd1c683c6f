#!/usr/bin/env bash
# scripts/bench-agent.sh: what the agent itself costs among short-lived processes, two
# builds side by side in the same minutes. ./profile and BEFORE (another build, e.g. an
# older commit's) run at once as `profile --agent`, each pushing to tests/receiver.py,
# while the churn of scripts/soak.sh (shells, ls, 50 ms workloads) runs without pause in a
# cgroup v2 group of its own, to which both agents are filtered (--cgroup): other work on
# the machine is not named by either, and both see the same processes. After a minute of
# warm-up, every 30 s: each agent's CPU clock ticks since and its RSS; at the end, each
# one's CPU in % of one core, and its own account of its windows and names.
# Needs root, ./profile, build/workloads (make workloads) and a cgroup2 mount. Not part
# of `make test`. Usage: BEFORE=old/profile scripts/bench-agent.sh [SECONDS] (default 300)
# PUSH_FORMAT (pyroscope unless set) is how ./profile pushes, BEFORE_PUSH_FORMAT (the same
# unless set) how BEFORE does: BEFORE=./profile PUSH_FORMAT=otlp BEFORE_PUSH_FORMAT=pyroscope
# sets one build's OTLP pushes beside its pprof ones. RUNTIMES=1 also runs, in the group, a
# Node.js service and a JVM, each twice, churning their code (scripts/runtime-workloads.sh,
# as the soak's RUNTIMES=1 does): both agents then name JS and Java frames all along.
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
BEFORE=${BEFORE:-}
DURATION=${1:-300}
PUSH_FORMAT=${PUSH_FORMAT:-pyroscope}
BEFORE_PUSH_FORMAT=${BEFORE_PUSH_FORMAT:-$PUSH_FORMAT}
WARM_UP=60

if [ "$(id -u)" != 0 ]; then
	echo "bench-agent: needs root to load BPF programs (try: sudo $0)" >&2
	exit 1
fi
[ -n "$BEFORE" ] || { echo "bench-agent: BEFORE=path/to/another/profile is missing" >&2; exit 1; }
for tool in "$PROFILE" "$BEFORE" "$ROOT/build/workloads/split" "$ROOT/build/workloads/syscalls"; do
	[ -x "$tool" ] || { echo "bench-agent: $tool is missing (make; make workloads)" >&2; exit 1; }
done
[ "$DURATION" -gt $((WARM_UP + 30)) ] 2>/dev/null ||
	{ echo "bench-agent: SECONDS must be a number above $((WARM_UP + 30))" >&2; exit 1; }
CGROUP_ROOT=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$CGROUP_ROOT" ] || { echo "bench-agent: no cgroup2 mount" >&2; exit 1; }

. "$ROOT/scripts/work-dir.sh"
work_dir profile-bench-agent
GROUP="$CGROUP_ROOT/profile-bench-agent.$$"
mkdir "$GROUP"
cleanup() {
	# The churn's last programs and the runtimes' (which write into $TMP as they end), then
	# the group, once empty; then the agents and $TMP.
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		xargs -r kill <"$GROUP/cgroup.procs" 2>/dev/null || true
		rmdir "$GROUP" 2>/dev/null && break
		sleep 0.2
	done
	work_dir_cleanup
}
trap cleanup EXIT

start_receiver bench-agent

# The soak's churn, in the group (the subshell moves itself before it starts anything).
churn() {
	echo "$BASHPID" >"$GROUP/cgroup.procs"
	local end=$(($(date +%s) + DURATION + 20))
	while [ "$(date +%s)" -lt "$end" ]; do
		sh -c 'true'
		/bin/true
		ls / >/dev/null
		"$ROOT/build/workloads/split" 0.05 >/dev/null &
		"$ROOT/build/workloads/syscalls" 0 >/dev/null &
		wait
	done
}

# The language runtimes' processes, in the group, for the whole run.
runtimes() {
	echo "$BASHPID" >"$GROUP/cgroup.procs"
	. "$ROOT/scripts/runtime-workloads.sh"
	start_runtime_workloads "$TMP" $((DURATION + 20)) || exit 1
	echo "bench-agent: Node ($("$NODE" --version)) and Java ($JAVA_HOME) running:$RUNTIME_PIDS"
	wait
}

start_agent() {
	PROFILE_DEBUG=1 "$1" --agent --cgroup "$GROUP" --push "http://127.0.0.1:$port" --push-format "$3" \
		$((DURATION + 10)) >/dev/null 2>"$TMP/$2.err" &
	BACKGROUND+=("$!")
	PIDS+=("$!")
}
PIDS=()
start_agent "$BEFORE" before "$BEFORE_PUSH_FORMAT"
start_agent "$PROFILE" now "$PUSH_FORMAT"
churn &
BACKGROUND+=("$!")
if [ -n "${RUNTIMES:-}" ]; then
	runtimes &
	BACKGROUND+=("$!")
fi

ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
rss() { awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status"; }
sleep "$WARM_UP"
for pid in "${PIDS[@]}"; do
	kill -0 "$pid" 2>/dev/null || { echo "bench-agent: an agent exited:" >&2; tail -n 2 "$TMP"/*.err >&2; exit 1; }
done
before0=$(ticks "${PIDS[0]}")
now0=$(ticks "${PIDS[1]}")
echo "bench-agent: $DURATION s, warm-up $WARM_UP s; BEFORE=$BEFORE ($BEFORE_PUSH_FORMAT) against $PROFILE ($PUSH_FORMAT)"
printf '%8s %14s %12s %14s %12s\n' seconds before_ticks before_kb now_ticks now_kb
elapsed=$WARM_UP
while [ $((elapsed + 30)) -le "$DURATION" ]; do
	sleep 30
	elapsed=$((elapsed + 30))
	printf '%8s %14s %12s %14s %12s\n' "$elapsed" $(($(ticks "${PIDS[0]}") - before0)) "$(rss "${PIDS[0]}")" \
		$(($(ticks "${PIDS[1]}") - now0)) "$(rss "${PIDS[1]}")"
done
before1=$(ticks "${PIDS[0]}")
now1=$(ticks "${PIDS[1]}")
hz=$(getconf CLK_TCK)
seconds=$((elapsed - WARM_UP))
awk -v b=$((before1 - before0)) -v n=$((now1 - now0)) -v s="$seconds" -v hz="$hz" 'BEGIN {
	printf "bench-agent: CPU over %d s, %% of one core: BEFORE %.3f %%, profile %.3f %% (%.2fx)\n",
		s, b / hz / s * 100, n / hz / s * 100, b ? n / b : 0 }'
wait "${PIDS[0]}" "${PIDS[1]}" || true
for name in before now; do
	grep -h -E '^profile: (windows|named user)' "$TMP/$name.err" | sed "s/^/bench-agent: $name: /"
done
