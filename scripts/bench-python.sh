#!/usr/bin/env bash
# scripts/bench-python.sh: Python frames, per CPython found (Debian's python3.11, and every
# pyenv 3.8 to 3.13): the known split (tests/workloads/python/split.py, whose own clock says
# how its CPU went) against the sampled shares; the share of samples that reach the process
# root through the Python frames; the thread check (tests/workloads/python/threads.py: no
# thread's samples name another thread's function); and the in-kernel ns per sample with
# Python frames against --no-python, alternating runs on one process.
# Needs root and ./profile. Takes about a minute per interpreter.
# Usage: scripts/bench-python.sh [SECONDS]   (default 5)
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
PROFILE=${PROFILE:-$ROOT/profile}
SECONDS_RUN=${1:-5}
WORK=$ROOT/tests/workloads/python

if [ "$(id -u)" != 0 ]; then
	echo "bench-python: needs root to load BPF programs (try: sudo $0)" >&2
	exit 1
fi
. "$ROOT/scripts/bpf-stats.sh"

stats_session bench-python

INTERPRETERS=()
[ -x /usr/bin/python3.11 ] && INTERPRETERS+=("/usr/bin/python3.11")
PYENV_ROOT=${PYENV_ROOT:-$(command -v pyenv >/dev/null && pyenv root || echo "$HOME/.pyenv")}
for dir in "$PYENV_ROOT"/versions/3.*; do
	case "$(basename "$dir")" in 3.8*|3.9*|3.10*|3.11*|3.12*|3.13*) ;; *) continue ;; esac
	[ -x "$dir/bin/python3" ] && INTERPRETERS+=("$dir/bin/python3")
done

# ns per sample of the perf_event program of a profile run on process $1, with args $2...
ns_per_sample() {
	local target=$1; shift
	"$PROFILE" -p "$target" -U -f 499 --folded "$@" 4 > /dev/null 2>&1 &
	local run=$! prog a b
	prog=$(prog_of "$run")
	sleep 1
	a=$(prog_stats "$prog")
	sleep 2
	b=$(prog_stats "$prog")
	wait "$run" || true
	echo "$a $b" | awk '{ n = $3 - $1; print (n > 0 ? ($4 - $2) / n : 0) }'
}

printf '%-34s %7s %7s %7s %6s %8s %9s %9s %6s\n' python busy truth diff root threads ns-python ns-native ratio
for py in "${INTERPRETERS[@]}"; do
	version=$("$py" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
	# The known split.
	"$py" "$WORK/split.py" $((SECONDS_RUN + 4)) "$TMP/truth" > "$TMP/ready" &
	pid=$!; PIDS+=("$pid")
	sleep 0.5
	"$PROFILE" -p "$pid" -U -f 499 --folded "$SECONDS_RUN" > "$TMP/split.folded" 2> "$TMP/split.err" || true
	wait "$pid" || true
	read -r busy_s compressing_s < "$TMP/truth"
	read -r busy compressing root all < <(awk '
		{ n = $NF; all += n; b = c = m = 0
		  if (index($0, ";busy (split.py:")) b = 1
		  if (index($0, ";compressing (split.py:")) c = 1
		  if (index($0, ";<module> (split.py:") && $0 ~ /^[^;]*;(_start|__libc_start_main_impl);/) m = 1
		  busy += b * n; compressing += c * n; root += m * n }
		END { print busy + 0, compressing + 0, root + 0, all + 0 }' "$TMP/split.folded")
	# The threads.
	"$py" "$WORK/threads.py" 30 > /dev/null &
	pid=$!; PIDS+=("$pid")
	sleep 0.5
	"$PROFILE" -p "$pid" -U -f 499 --folded 3 > "$TMP/threads.folded" 2> /dev/null || true
	kill "$pid" 2>/dev/null || true
	wrong=$(awk '
		{ comm = $0; sub(/;.*/, "", comm)
		  own["py-spin-a"] = "spin_a"; own["py-spin-b"] = "spin_b"; own["py-sleep"] = "sleeper"; own["py-hash"] = "hasher"
		  if (!(comm in own)) next
		  for (c in own) if (c != comm && index($0, ";" own[c] " (threads.py:")) { bad += $NF; break } }
		END { print bad + 0 }' "$TMP/threads.folded")
	threads=$([ "$wrong" = 0 ] && echo ok || echo "$wrong-bad")
	# The cost: alternating runs on one process.
	"$py" "$WORK/split.py" 60 "$TMP/truth2" > /dev/null &
	pid=$!; PIDS+=("$pid")
	sleep 0.5
	with=0 without=0
	for round in 1 2; do
		with=$(echo "$with $(ns_per_sample "$pid")" | awk '{ print $1 + $2 }')
		without=$(echo "$without $(ns_per_sample "$pid" --no-python)" | awk '{ print $1 + $2 }')
	done
	kill "$pid" 2>/dev/null || true
	case "$py" in /usr/bin/*) build="Debian $py" ;; *) build="pyenv" ;; esac
	awk -v label="$version $build" -v busy="$busy" -v comp="$compressing" -v bs="$busy_s" -v cs="$compressing_s" \
	    -v root="$root" -v all="$all" -v threads="$threads" -v with="$with" -v without="$without" 'BEGIN {
		share = (busy + comp > 0) ? busy / (busy + comp) : 0; truth = bs / (bs + cs)
		ratio = (without > 0) ? with / without : 0; rooted = all ? 100 * root / all : 0
		printf "%-34s %6.1f%% %6.1f%% %+6.1f %5.1f%% %8s %9.0f %9.0f %6.2f\n", label,
			100 * share, 100 * truth, 100 * (share - truth), rooted, threads, with / 2, without / 2, ratio }'
done

# Naming at the end: a program of 10,000 functions, each a code object of its own, called
# in turn; profile names every one it sampled, and says how long that took (PROFILE_DEBUG).
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3)
cat > "$TMP/many.py" <<'PY'
import sys, time
ns = {}
exec("\n".join(f"def f{i}(n):\n    s = 0\n    for k in range(n): s += k\n    return s" for i in range(10000)), ns)
fs = [ns[f"f{i}"] for i in range(10000)]
end = time.monotonic() + float(sys.argv[1])
while time.monotonic() < end:
    for f in fs:
        f(40)
PY
"$py" "$TMP/many.py" $((SECONDS_RUN * 3)) > /dev/null &
pid=$!; PIDS+=("$pid")
sleep 1
PROFILE_DEBUG=1 "$PROFILE" -p "$pid" -U -f 2999 --folded $((SECONDS_RUN * 2)) 2>&1 > /dev/null |
	sed -n 's/^profile: python: .* \([0-9]*\) code objects named (\([0-9]*\) not), naming CPU \([0-9.]*\) ms$/\1 \2 \3/p' > "$TMP/naming"
kill "$pid" 2>/dev/null || true
read -r named unnamed naming_ms < "$TMP/naming" || { named=0; unnamed=0; naming_ms=0; }
echo
echo "naming ($py, 10,000 functions): $named code objects named ($unnamed not) in $naming_ms ms of CPU" \
	"($(awk -v n="$named" -v ms="$naming_ms" 'BEGIN { printf "%.0f", n ? ms * 10000 / n : 0 }') ms per 10,000)"
