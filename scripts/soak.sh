#!/bin/sh
# scripts/soak.sh: ./profile system-wide at 999 Hz for DURATION seconds (default 600) while
# short-lived processes come and go; every INTERVAL seconds (default 10) it samples the
# profiler's memory (VmRSS, VmHWM; RSS's anonymous and file-backed parts) and open fds,
# then says whether both stayed flat.
# FORMAT_ARGS (default --folded) picks the report: e.g. FORMAT_ARGS=-v for the stacks with
# addresses, which keep every process apart. PROFILE_DEBUG=1 ends its stderr with what
# the profiler kept (keys, stacks, processes followed).
# AGENT=1 soaks the continuous agent instead: `profile --agent` (19 Hz, a window every 15 s)
# pushing every window to tests/receiver.py (PUSH_FORMAT pyroscope or parca) for DURATION
# seconds (default 1800), with the same churn; it also reports the profiler's CPU (under
# 0.5 % of a core is the target), the windows the receiver got and whether each request
# followed the API, the pusher's time per window, how many user addresses were named from
# the names earlier windows kept and how many from their files, and whether RSS at the end
# is within 2 % of its value a third of the way in (30 and 10 minutes by default).
# RUNTIMES=1 keeps a Node.js service and a JVM running beside the churn all along, each
# twice: one hot loop (tests/workloads/node/split.js, holdout.Split) and one that churns its
# compiled code (churn.js forcing GCs, holdout.Churn unloading classes), so that the
# profiler keeps naming JS and Java frames, new ones all the time, for the whole run.
# Not part of `make test`: run it by hand (as root, or it uses sudo) after `make`.
set -u
cd "$(dirname "$0")/.."
AGENT=${AGENT:-}
DURATION=${DURATION:-$([ -n "$AGENT" ] && echo 1800 || echo 600)}
INTERVAL=${INTERVAL:-10}
PROFILE=${PROFILE:-./profile}
OUT=${SOAK_OUTPUT:-build/soak}
FORMAT_ARGS=${FORMAT_ARGS:---folded}
SUDO=$([ "$(id -u)" = 0 ] || echo sudo)

[ -x "$PROFILE" ] || { echo "soak: $PROFILE is not built (run make)" >&2; exit 1; }
make -s workloads >/dev/null || exit 1
mkdir -p "$OUT"

# Churn: every round starts a shell, a few tiny programs and two short workloads, so the
# profiler keeps meeting new processes (new PIDs, new maps, exits) all the time.
churn() {
	end=$(($(date +%s) + DURATION))
	while [ "$(date +%s)" -lt "$end" ]; do
		sh -c 'true'
		/bin/true
		ls / >/dev/null
		build/workloads/split 0.05 &
		build/workloads/syscalls 0 &
		wait
	done
}

runtimes=""
if [ -n "${RUNTIMES:-}" ]; then
	. scripts/runtime-workloads.sh
	start_runtime_workloads "$OUT" "$DURATION" || exit 1
	runtimes=$RUNTIME_PIDS
	echo "soak: Node ($("$NODE" --version)) and Java ($JAVA_HOME) running:$runtimes"
fi

receiver=""
if [ -n "$AGENT" ]; then
	PUSH_FORMAT=${PUSH_FORMAT:-pyroscope}
	rm -rf "$OUT/received"
	mkdir -p "$OUT/received"
	# Emptied here: the receiver's own redirection happens in its child, after this shell
	# may already read the file, which held the last soak's port.
	: >"$OUT/receiver.out"
	python3 tests/receiver.py --dir "$OUT/received" --port 0 >"$OUT/receiver.out" 2>"$OUT/receiver.err" &
	receiver=$!
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		port=$(awk '$1 == "port" { print $2; exit }' "$OUT/receiver.out")
		[ -n "$port" ] && break
		sleep 0.5
	done
	[ -n "$port" ] || { echo "soak: the receiver did not start:" >&2; cat "$OUT/receiver.err" >&2; exit 1; }
	PROFILE_DEBUG=1 $SUDO "$PROFILE" --agent --push "http://127.0.0.1:$port" --push-format "$PUSH_FORMAT" \
		"$DURATION" >"$OUT/report" 2>"$OUT/stderr" &
	launcher=$!
else
	# shellcheck disable=SC2086 # FORMAT_ARGS is a list of options
	$SUDO "$PROFILE" -a -f 999 $FORMAT_ARGS "$DURATION" >"$OUT/report" 2>"$OUT/stderr" &
	launcher=$!
fi
sleep 1
# With sudo in front, the profiler is sudo's child.
pid=$(pgrep -n -x profile -P "$launcher" 2>/dev/null || echo "$launcher")
[ -r "/proc/$pid/status" ] || { echo "soak: the profiler did not start:" >&2; cat "$OUT/stderr" >&2; exit 1; }
churn &
churner=$!

status_kb() { awk -v key="$1:" '$1 == key { print $2 }' "/proc/$pid/status" 2>/dev/null; }
# utime + stime in clock ticks (fields 14 and 15; the comm in field 2 has no spaces here).
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null; }
hz=$(getconf CLK_TCK)
# Open fds, less the agent's decompressed copies of compressed DWARF (memfds named
# profile-dwarf, a few, bounded in bytes and counted in its summary).
fds() { $SUDO ls -l "/proc/$pid/fd" 2>/dev/null | grep -c -v -e '^total' -e 'memfd:profile-dwarf'; }

if [ -n "$AGENT" ]; then
	echo "soak: pid $pid, ${DURATION} s as --agent (19 Hz, 15 s windows) pushing to $PUSH_FORMAT on port $port, sampled every ${INTERVAL} s"
else
	echo "soak: pid $pid, ${DURATION} s at 999 Hz system-wide, sampled every ${INTERVAL} s"
fi
# RSS is also split into its anonymous part (the heap) and its file-backed part (the
# binaries and the ELF files mapped to name frames, whose pages count once touched).
printf '%8s %10s %10s %6s %10s %10s %10s\n' "seconds" "rss_kb" "hwm_kb" "fds" "cpu_ticks" "anon_kb" "file_kb" |
	tee "$OUT/samples"
# VmHWM is read every second until the profiler exits: the report phase after sampling
# (read the maps, symbolize, write) has its own peak.
start=$(date +%s)
next=0
peak_hwm=0
sampling_ended=""
while kill -0 "$pid" 2>/dev/null; do
	now=$(($(date +%s) - start))
	hwm=$(status_kb VmHWM)
	[ -n "$hwm" ] && [ "$hwm" -gt "$peak_hwm" ] && peak_hwm=$hwm
	if [ "$now" -ge "$DURATION" ]; then
		[ -n "$sampling_ended" ] || sampling_ended=$(date +%s)
	elif [ "$now" -ge "$next" ]; then
		printf '%8s %10s %10s %6s %10s %10s %10s\n' "$now" "$(status_kb VmRSS)" "$hwm" "$(fds)" "$(cpu_ticks)" \
			"$(status_kb RssAnon)" "$(status_kb RssFile)" | tee -a "$OUT/samples"
		next=$((next + INTERVAL))
	fi
	sleep 1
done
[ -n "$sampling_ended" ] || sampling_ended=$(date +%s)
wait "$launcher"
rc=$?
kill "$churner" 2>/dev/null
wait "$churner" 2>/dev/null
# shellcheck disable=SC2086 # a list of pids
[ -n "$runtimes" ] && { kill $runtimes 2>/dev/null; wait $runtimes 2>/dev/null; }
[ -n "$receiver" ] && { sleep 1; kill "$receiver" 2>/dev/null; wait "$receiver" 2>/dev/null; }

echo "soak: exit status $rc; report phase $(($(date +%s) - sampling_ended)) s; report $(wc -l <"$OUT/report") lines," \
	"$(wc -c <"$OUT/report") bytes"
tail -1 "$OUT/stderr"
echo "soak: peak RSS (VmHWM) including the report: ${peak_hwm} kB"

# Flat: after the first quarter (warm-up: kernel symbols, first processes), RSS grows by at
# most 10% or 4 MB, whichever is larger, and the fd count varies by at most 2.
awk -v skip="$((DURATION / 4))" '
	NR > 1 && $1 >= skip && $2 != "" {
		if (n == 0) { rss0 = $2; fmin = fmax = $4 }
		n++; rss = $2
		if ($2 > rmax) rmax = $2
		if ($4 < fmin) fmin = $4
		if ($4 > fmax) fmax = $4
	}
	END {
		if (n < 2) { print "soak: too few samples to judge (raise DURATION)"; exit 1 }
		limit = rss0 * 0.10; if (limit < 4096) limit = 4096
		rss_flat = rmax - rss0 <= limit
		fd_flat = fmax - fmin <= 2
		printf "soak: RSS %s (%d kB after warm-up, %d kB at most, %d kB at the end)\n",
			rss_flat ? "flat" : "GROWING", rss0, rmax, rss
		printf "soak: fds %s (%d to %d)\n", fd_flat ? "flat" : "GROWING", fmin, fmax
		exit !(rss_flat && fd_flat)
	}' "$OUT/samples"
flat=$?
# The agent's target: RSS at the end within 2 % of its value a third of the way in (at 10
# and 30 minutes of the default 30), from the samples nearest those times.
[ -n "$AGENT" ] && awk -v third="$((DURATION / 3))" -v full="$DURATION" '
	NR > 1 && $2 != "" {
		if (!(a) || ($1 <= third && third - $1 < third - at)) { at = $1; a = $2 }
		if ($1 <= full) { bt = $1; b = $2 }
		if ($1 <= 2 * third) { mt = $1; m = $2 }
	}
	NR > 1 && $2 != "" && $1 <= third { aa = $6; af = $7 }
	NR > 1 && $2 != "" && $1 <= full { ba = $6; bf = $7 }
	END {
		if (!a || !b || bt <= at) { print "soak: too few samples for the 2 % target"; exit 1 }
		d = (b - a) / a * 100
		printf "soak: RSS %d kB at %d s, %d kB at %d s, %d kB at %d s: %+.2f %% (%s the 2 %% target)\n",
			a, at, m, mt, b, bt, d, (d <= 2 && d >= -2) ? "within" : "OUTSIDE"
		printf "soak: of it anonymous %d to %d kB (%+d), file-backed %d to %d kB (%+d)\n",
			aa, ba, ba - aa, af, bf, bf - af
		exit !(d <= 2 && d >= -2)
	}' "$OUT/samples"
two_percent=$?
[ -z "$AGENT" ] && { [ "$rc" = 0 ] && [ "$flat" = 0 ]; exit; }

# The agent: its CPU over the run after warm-up, in % of one core.
awk -v skip="$((DURATION / 4))" -v hz="$hz" '
	NR > 1 && $1 >= skip && $5 != "" { if (n == 0) { t0 = $1; c0 = $5 } n++; t = $1; c = $5 }
	END {
		if (n < 2 || t == t0) { print "soak: too few samples for the CPU"; exit 1 }
		pct = (c - c0) / hz / (t - t0) * 100
		printf "soak: CPU %.3f %% of a core after warm-up (%s the 0.5 %% target)\n", pct, pct < 0.5 ? "under" : "OVER"
		exit !(pct < 0.5)
	}' "$OUT/samples"
cpu_ok=$?
windows=$(sed -n 's/^profile: \([0-9]*\) windows: .*/\1/p' "$OUT/stderr" | tail -1)
received=$(find "$OUT/received" -name '*.json' | wc -l)
bad=$(grep -L '"verdict": \[\]' "$OUT/received"/*.json 2>/dev/null | wc -l)
echo "soak: ${windows:-?} windows closed, $received requests received, $bad not following the API"
grep -E '^profile: (push|windows|named)' "$OUT/stderr"
if [ -n "$runtimes" ]; then
	# The windows' profiles (gunzipped pprof: names in their string tables) naming each.
	java_named=$(grep -l -a -F 'holdout.Split.hotA' "$OUT/received"/*.pb 2>/dev/null | wc -l)
	churned=$(grep -l -a -E 'holdout\.G[0-9]{4}' "$OUT/received"/*.pb 2>/dev/null | wc -l)
	js_named=$(grep -l -a -F 'split.js' "$OUT/received"/*.pb 2>/dev/null | wc -l)
	echo "soak: of $received windows, $java_named name holdout.Split.hotA, $churned holdout.GNNNN, $js_named split.js"
fi
[ "$rc" = 0 ] && [ "$flat" = 0 ] && [ "$two_percent" = 0 ] && [ "$cpu_ok" = 0 ] && [ "${windows:-x}" = "$received" ] && [ "$bad" = 0 ]
